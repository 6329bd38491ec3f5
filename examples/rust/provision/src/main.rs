//! The provision_vm workflow of docs/design.md ("Ids") in Rust
//! (examples/provision in Go), in two versions: provision_vm with
//! positional ids (1, 2.0.1, 2.1.1) and provision_vm_named with named ids
//! (create-vm, fanout.0.attach-ip, fanout.1.setup-sg).

use skein::{json, Ctx, Opts, Result};

/// The options of an op: its id when the workflow names its ops.
fn id(named: bool, name: &str) -> Opts {
    if named {
        Opts::new().id(name)
    } else {
        Opts::new()
    }
}

/// Runs create_vm, then attach_ip and setup_security_group in a parallel
/// fork, and returns the ip.
async fn provision(ctx: Ctx, input: String, named: bool) -> Result<String> {
    let v = json::parse(&input)?;
    let field = |k: &str| v.get(k).and_then(json::Value::as_str).unwrap_or("").to_string();
    let (name, size) = (field("name"), field("size"));

    let vm = ctx
        .with(id(named, "create-vm"))
        .step("create_vm", |_| async { Ok(json::quote(&format!("vm-{}-{}", name, size))) })
        .await?;
    let vm = json::unquote(&vm)?;

    let mut g = ctx.with(id(named, "fanout")).parallel();
    let vm1 = vm.clone();
    g.go(move |ctx| async move {
        let ip = format!("10.0.0.7/{}", vm1);
        ctx.with(id(named, "attach-ip")).step("attach_ip", |_| async { Ok(json::quote(&ip)) }).await
    });
    g.go(move |ctx| async move {
        let sg = format!("sg-{}/{}", name, vm);
        ctx.with(id(named, "setup-sg")).step("setup_security_group", |_| async { Ok(json::quote(&sg)) }).await
    });
    let vals = g.wait().await?;
    Ok(vals[0].clone()) // the ip, as JSON
}

fn main() {
    skein::register("provision_vm", |ctx, input| provision(ctx, input, false));
    skein::register("provision_vm_named", |ctx, input| provision(ctx, input, true));
    skein::run()
}
