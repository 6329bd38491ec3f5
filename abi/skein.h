/*
 * skein.h: the C declarations of skein ABI v1, for guests written in C
 * (or any language that can read a C header). abi/README.md is the
 * specification; this header states the same contract as code: the host
 * functions with their wasm import names, the constants, and decoders for
 * the messages the host returns. abi/abi.go and abi/msg.go are the Go
 * side; host/skeinh_test.go checks this file against them.
 *
 * Build a guest as a WASI command:
 *   clang --target=wasm32-wasi -O2 -I abi -o guest.wasm guest.c
 * (Debian: clang, lld, wasi-libc and libclang-rt-14-dev-wasm32.)
 *
 * All integers in messages are little-endian; "str" and "bytes" are a u32
 * length followed by that many bytes. Pointers are wasm32 offsets into the
 * module's memory. Names are prefixed skein_ so that none clashes with C
 * (the wasm imports "await" and "select" are skein_await and skein_select).
 */
#ifndef SKEIN_H
#define SKEIN_H

#include <stdint.h>

#define SKEIN_ABI_VERSION 1
#define SKEIN_MODULE "skein"

/* Op kinds: the kind argument of skein_op (README §7). */
#define SKEIN_OP_STEP 1    /* guest body, memoized; fn: function identity */
#define SKEIN_OP_CALL 2    /* host activity; fn: activity; arg: input JSON */
#define SKEIN_OP_SLEEP 3   /* durable timer; arg: 8-byte LE duration in ns */
#define SKEIN_OP_PROMISE 4 /* durable promise settled from outside; arg: JSON Schema of its value, or empty */
#define SKEIN_OP_CHILD 5   /* child workflow; fn: workflow; arg: input JSON */
#define SKEIN_OP_SPAWN 6   /* spawn a task; no outcome row */
#define SKEIN_OP_FORK 7    /* open a parallel fork; no outcome row */
#define SKEIN_OP_BRANCH 8  /* start a branch of a fork; arg: 4-byte LE fork handle */
#define SKEIN_OP_ATTRS 9   /* set search attributes; arg: a JSON object of values by name; settled at once (state 1) */

/* Status of an outcome, of skein_step_done and of skein_task_done. */
#define SKEIN_STATUS_OK 1    /* the data is a JSON value */
#define SKEIN_STATUS_ERROR 2 /* the data is error text */
#define SKEIN_STATUS_PANIC 3 /* skein_task_done only: panic text */
#define SKEIN_STATUS_FATAL 4 /* skein_step_done only: an error no retry policy retries */

/* OpResult.state: what the guest does after skein_op. */
#define SKEIN_STATE_PENDING 0  /* await the promise when the value is needed */
#define SKEIN_STATE_SETTLED 1  /* the outcome is in the message */
#define SKEIN_STATE_RUN_BODY 2 /* run the step body, then skein_step_done */
#define SKEIN_STATE_ID_ERROR 3 /* the name broke a rule; nothing was issued */

/* Results of skein_step_done. */
#define SKEIN_STEP_SETTLED 0 /* the outcome is settled: continue */
#define SKEIN_STEP_AWAIT 1   /* the outcome is held: skein_await the promise */
#define SKEIN_STEP_RETRY 2   /* the attempt failed: yield (skein_next), then run the body again */

/* Invocation.mode. */
#define SKEIN_MODE_RUN 1      /* run the named workflow */
#define SKEIN_MODE_DESCRIBE 2 /* announce only (this host ends the module inside skein_invocation instead) */

/* Resume.kind. */
#define SKEIN_RESUME_START 1 /* start the task's function */
#define SKEIN_RESUME_WAKE 2  /* continue the task where it yielded */

#define SKEIN_IMPORT(name) __attribute__((import_module("skein"), import_name(name)))

/*
 * Host functions (README §5). A function with (buf, cap) produces a
 * message of n >= 1 bytes and returns n: it is in buf when n <= cap, else
 * the guest allocates n bytes and calls skein_take(that, n) before any
 * other message-producing call. Every task argument must be the running
 * task.
 */
SKEIN_IMPORT("hello") uint32_t skein_hello(uint32_t version);
SKEIN_IMPORT("workflows") void skein_workflows(const char *names, uint32_t len);
SKEIN_IMPORT("invocation") uint32_t skein_invocation(uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("take") uint32_t skein_take(uint8_t *buf, uint32_t len);
SKEIN_IMPORT("next") uint32_t skein_next(uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("op")
uint32_t skein_op(uint32_t task, uint32_t kind, const char *name, uint32_t name_len, const char *fn, uint32_t fn_len,
                  const uint8_t *arg, uint32_t arg_len, uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("step_done")
uint32_t skein_step_done(uint32_t task, uint32_t promise, uint32_t status, const uint8_t *data, uint32_t len);
SKEIN_IMPORT("await") uint32_t skein_await(uint32_t task, uint32_t promise, uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("select")
uint32_t skein_select(uint32_t task, const uint32_t *promises, uint32_t n, uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("task_done") void skein_task_done(uint32_t task, uint32_t status, const uint8_t *data, uint32_t len);
SKEIN_IMPORT("body_sleep") void skein_body_sleep(uint32_t task, int64_t ns);
SKEIN_IMPORT("real_now") int64_t skein_real_now(void);
SKEIN_IMPORT("real_rand") void skein_real_rand(uint8_t *buf, uint32_t len);
SKEIN_IMPORT("outcomes") uint32_t skein_outcomes(uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("op_options") void skein_op_options(uint32_t task, const uint8_t *msg, uint32_t len);
SKEIN_IMPORT("canceled") uint32_t skein_canceled(uint8_t *buf, uint32_t cap);
SKEIN_IMPORT("continue_as_new") void skein_continue_as_new(uint32_t task, const uint8_t *input, uint32_t len);
SKEIN_IMPORT("input_schema")
uint32_t skein_input_schema(const char *workflow, uint32_t workflow_len, const char *schema, uint32_t schema_len);
/* Optional (README §5, feed): writes at most cap bytes, never a message for
 * skein_take; 0 when cap is below SKEIN_FEED_HEADER. */
SKEIN_IMPORT("feed") uint32_t skein_feed(uint32_t task, uint32_t used, uint8_t *buf, uint32_t cap);

/*
 * Messages (README §9). The decoders read a message in place: the bytes
 * they return point into it, so copy what must outlive the next
 * message-producing call. Each returns 0, or -1 if the message is short.
 */

/* A byte string inside a message (not NUL-terminated). */
typedef struct {
	const uint8_t *p;
	uint32_t len;
} skein_bytes;

/* Outcome: u32 status (1 or 2), bytes data (JSON value or error text). */
typedef struct {
	uint32_t status;
	skein_bytes data;
} skein_outcome;

/* Invocation: u8 mode, str workflow, bytes input (JSON). */
typedef struct {
	uint8_t mode;
	skein_bytes workflow, input;
} skein_invocation_msg;

/* OpResult: u8 state, u32 promise (fork: the fork handle), u32 task, str key;
 * then an Outcome if state is SETTLED; or, if state is RUN_BODY, u32
 * attempt (the durable attempt number, 1, 2, ...; a host before it sends
 * none, and attempt is then 0); or, if state is ID_ERROR, str scope,
 * str name, str rule, str message. */
typedef struct {
	uint8_t state;
	uint32_t promise, task;
	skein_bytes key;
	skein_outcome outcome;
	uint32_t attempt;
	skein_bytes scope, name, rule, message;
} skein_op_result;

/* Resume: u8 kind, u32 task, u32 promise; then an Outcome if kind is WAKE
 * and promise != 0 (promise 0 is a body wake, without an outcome). */
typedef struct {
	uint8_t kind;
	uint32_t task, promise;
	skein_outcome outcome;
} skein_resume;

/* Wait: u8 ready; then, if ready, u32 index and an Outcome. */
typedef struct {
	uint8_t ready;
	uint32_t index;
	skein_outcome outcome;
} skein_wait;

/* Outcomes list: u32 count, then count times str key, str function, Outcome.
 * Read it entry by entry with skein_next_outcome. */
typedef struct {
	skein_bytes key, function;
	skein_outcome outcome;
} skein_outcome_entry;

/* Feed: u8 replaying, u32 count, then count times u8 kind, u32 promise,
 * str key, str function, Outcome. Read the header with skein_read_u8 and
 * skein_read_u32, then entry by entry with skein_next_fed. */
#define SKEIN_FEED_HEADER 5
typedef struct {
	uint8_t kind;
	uint32_t promise;
	skein_bytes key, function;
	skein_outcome outcome;
} skein_fed;

/* OpOptions (the message of skein_op_options): 40 bytes of fixed fields,
 * u32 max_attempts, u64 initial_backoff_ns, u64 max_backoff_ns,
 * u32 multiplier (thousandths), u32 jitter (thousandths), u64 timeout_ns,
 * u32 n; then n times str (error texts that are not retried); then,
 * optionally, u32 parent_close (a child op only: 1 cancel, 2 abandon;
 * 0 or absent: cancel); then, optionally, u32 on_exhausted (a step or
 * call with retries: 0 or absent fail the op, 1 pause the run). */
#define SKEIN_PARENT_CLOSE_CANCEL 1
#define SKEIN_PARENT_CLOSE_ABANDON 2
#define SKEIN_ON_EXHAUSTED_FAIL 0
#define SKEIN_ON_EXHAUSTED_PAUSE 1
#define SKEIN_OP_OPTIONS_FIXED 40

typedef struct {
	const uint8_t *p, *end;
	int bad;
} skein_reader;

static inline skein_reader skein_reader_of(const uint8_t *p, uint32_t len) {
	skein_reader r = {p, p + len, 0};
	return r;
}

static inline const uint8_t *skein_read_n(skein_reader *r, uint32_t n) {
	if (r->bad || (uint32_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

static inline uint8_t skein_read_u8(skein_reader *r) {
	const uint8_t *p = skein_read_n(r, 1);
	return p ? p[0] : 0;
}

static inline uint32_t skein_read_u32(skein_reader *r) {
	const uint8_t *p = skein_read_n(r, 4);
	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
}

static inline skein_bytes skein_read_bytes(skein_reader *r) {
	skein_bytes b;
	b.len = skein_read_u32(r);
	b.p = skein_read_n(r, b.len);
	if (!b.p)
		b.len = 0;
	return b;
}

static inline skein_outcome skein_read_outcome(skein_reader *r) {
	skein_outcome o;
	o.status = skein_read_u32(r);
	o.data = skein_read_bytes(r);
	return o;
}

static inline int skein_decode_invocation(const uint8_t *msg, uint32_t len, skein_invocation_msg *m) {
	skein_reader r = skein_reader_of(msg, len);
	m->mode = skein_read_u8(&r);
	m->workflow = skein_read_bytes(&r);
	m->input = skein_read_bytes(&r);
	return r.bad ? -1 : 0;
}

static inline int skein_decode_op_result(const uint8_t *msg, uint32_t len, skein_op_result *m) {
	skein_reader r = skein_reader_of(msg, len);
	skein_op_result z = {0};
	*m = z;
	m->state = skein_read_u8(&r);
	m->promise = skein_read_u32(&r);
	m->task = skein_read_u32(&r);
	m->key = skein_read_bytes(&r);
	if (m->state == SKEIN_STATE_SETTLED) {
		m->outcome = skein_read_outcome(&r);
	} else if (m->state == SKEIN_STATE_RUN_BODY) {
		if (!r.bad && r.end != r.p)
			m->attempt = skein_read_u32(&r);
	} else if (m->state == SKEIN_STATE_ID_ERROR) {
		m->scope = skein_read_bytes(&r);
		m->name = skein_read_bytes(&r);
		m->rule = skein_read_bytes(&r);
		m->message = skein_read_bytes(&r);
	}
	return r.bad ? -1 : 0;
}

static inline int skein_decode_resume(const uint8_t *msg, uint32_t len, skein_resume *m) {
	skein_reader r = skein_reader_of(msg, len);
	skein_resume z = {0};
	*m = z;
	m->kind = skein_read_u8(&r);
	m->task = skein_read_u32(&r);
	m->promise = skein_read_u32(&r);
	if (m->kind == SKEIN_RESUME_WAKE && m->promise != 0)
		m->outcome = skein_read_outcome(&r);
	return r.bad ? -1 : 0;
}

static inline int skein_decode_wait(const uint8_t *msg, uint32_t len, skein_wait *m) {
	skein_reader r = skein_reader_of(msg, len);
	skein_wait z = {0};
	*m = z;
	m->ready = skein_read_u8(&r);
	if (m->ready) {
		m->index = skein_read_u32(&r);
		m->outcome = skein_read_outcome(&r);
	}
	return r.bad ? -1 : 0;
}

/* Reads the next entry of an outcomes list; r starts after the count
 * (skein_read_u32 reads the count). */
static inline int skein_next_outcome(skein_reader *r, skein_outcome_entry *e) {
	e->key = skein_read_bytes(r);
	e->function = skein_read_bytes(r);
	e->outcome = skein_read_outcome(r);
	return r->bad ? -1 : 0;
}

/* Reads the next entry of a feed; r starts after the header. */
static inline int skein_next_fed(skein_reader *r, skein_fed *e) {
	e->kind = skein_read_u8(r);
	e->promise = skein_read_u32(r);
	e->key = skein_read_bytes(r);
	e->function = skein_read_bytes(r);
	e->outcome = skein_read_outcome(r);
	return r->bad ? -1 : 0;
}

/* Little-endian writers for op arguments and the op_options message. */
static inline void skein_put_u32(uint8_t *p, uint32_t v) {
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static inline void skein_put_u64(uint8_t *p, uint64_t v) {
	skein_put_u32(p, (uint32_t)v);
	skein_put_u32(p + 4, (uint32_t)(v >> 32));
}

#endif /* SKEIN_H */
