//! The host functions of skein ABI v1 (abi/README.md §5, abi/skein.h), and
//! stubs for other targets so that workflow code can be type-checked and
//! unit-tested natively.

#[cfg(target_arch = "wasm32")]
mod imp {
    #[link(wasm_import_module = "skein")]
    extern "C" {
        #[link_name = "hello"]
        pub fn hello(version: u32) -> u32;
        #[link_name = "workflows"]
        pub fn workflows(ptr: *const u8, len: u32);
        #[link_name = "invocation"]
        pub fn invocation(buf: *mut u8, cap: u32) -> u32;
        #[link_name = "take"]
        pub fn take(buf: *mut u8, len: u32) -> u32;
        #[link_name = "next"]
        pub fn next(buf: *mut u8, cap: u32) -> u32;
        #[link_name = "op"]
        pub fn op(
            task: u32,
            kind: u32,
            name: *const u8,
            name_len: u32,
            func: *const u8,
            func_len: u32,
            arg: *const u8,
            arg_len: u32,
            buf: *mut u8,
            cap: u32,
        ) -> u32;
        #[link_name = "step_done"]
        pub fn step_done(task: u32, promise: u32, status: u32, ptr: *const u8, len: u32) -> u32;
        #[link_name = "await"]
        pub fn await_(task: u32, promise: u32, buf: *mut u8, cap: u32) -> u32;
        #[link_name = "select"]
        pub fn select(task: u32, ids: *const u8, n: u32, buf: *mut u8, cap: u32) -> u32;
        #[link_name = "task_done"]
        pub fn task_done(task: u32, status: u32, ptr: *const u8, len: u32);
        #[link_name = "body_sleep"]
        pub fn body_sleep(task: u32, ns: i64);
        #[link_name = "real_now"]
        pub fn real_now() -> i64;
        #[link_name = "real_rand"]
        pub fn real_rand(ptr: *mut u8, len: u32);
        #[link_name = "outcomes"]
        pub fn outcomes(buf: *mut u8, cap: u32) -> u32;
        #[link_name = "op_options"]
        pub fn op_options(task: u32, ptr: *const u8, len: u32);
        #[link_name = "canceled"]
        pub fn canceled(buf: *mut u8, cap: u32) -> u32;
        #[link_name = "feed"]
        pub fn feed(task: u32, used: u32, buf: *mut u8, cap: u32) -> u32;
        #[link_name = "input_schema"]
        pub fn input_schema(workflow: *const u8, workflow_len: u32, schema: *const u8, schema_len: u32) -> u32;
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::too_many_arguments)]
mod imp {
    const NOT_WASM: &str = "skein: workflow modules run only inside the skein host; build them with --target wasm32-wasi";
    pub unsafe fn hello(_: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn workflows(_: *const u8, _: u32) { panic!("{}", NOT_WASM) }
    pub unsafe fn invocation(_: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn take(_: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn next(_: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn op(_: u32, _: u32, _: *const u8, _: u32, _: *const u8, _: u32, _: *const u8, _: u32, _: *mut u8, _: u32) -> u32 {
        panic!("{}", NOT_WASM)
    }
    pub unsafe fn step_done(_: u32, _: u32, _: u32, _: *const u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn await_(_: u32, _: u32, _: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn select(_: u32, _: *const u8, _: u32, _: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn task_done(_: u32, _: u32, _: *const u8, _: u32) { panic!("{}", NOT_WASM) }
    pub unsafe fn body_sleep(_: u32, _: i64) { panic!("{}", NOT_WASM) }
    pub unsafe fn real_now() -> i64 { panic!("{}", NOT_WASM) }
    pub unsafe fn real_rand(_: *mut u8, _: u32) { panic!("{}", NOT_WASM) }
    pub unsafe fn outcomes(_: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn op_options(_: u32, _: *const u8, _: u32) { panic!("{}", NOT_WASM) }
    pub unsafe fn canceled(_: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn feed(_: u32, _: u32, _: *mut u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
    pub unsafe fn input_schema(_: *const u8, _: u32, _: *const u8, _: u32) -> u32 { panic!("{}", NOT_WASM) }
}

pub(crate) use imp::*;
