/*
 * glue.h: a small runtime for the C guests in this folder, written from
 * abi/README.md and abi/skein.h alone. C has no coroutines, so each task
 * is a state machine in the style of protothreads: a task function
 * resumes at the switch label it stored in t->pc, and everything it keeps
 * across a wait lives in its struct task.
 */
#ifndef GLUE_H
#define GLUE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skein.h"

enum { WAITING = 0, FINISHED = 1 };

typedef struct task task;
typedef int (*task_fn)(task *);

struct task {
	uint32_t id;
	task_fn fn;
	int pc;             /* where the task resumes */
	uint32_t status;    /* the last outcome: its status ... */
	char *out;          /* ... and its data, NUL-terminated (owned) */
	uint32_t p;         /* the promise of the current op */
	int i, n;           /* counters */
	const uint32_t *sel; /* the promises of a pending select */
	uint32_t handles[8];
	char *vals[12];     /* values kept across waits (owned) */
	char buf[1024];      /* scratch for building values */
};

static inline void fail(const char *what) {
	fprintf(stderr, "guest: %s\n", what);
	abort();
}

/* Small on purpose: longer messages take the skein_take path. */
static uint8_t msgbuf[128];
static uint8_t *bigbuf;

/* The n-byte message the host just produced. */
static inline const uint8_t *message(uint32_t n) {
	if (n <= sizeof msgbuf)
		return msgbuf;
	free(bigbuf);
	bigbuf = malloc(n);
	if (!bigbuf || skein_take(bigbuf, n) != n)
		fail("take failed");
	return bigbuf;
}

static inline char *copy(const uint8_t *p, uint32_t n) {
	char *s = malloc(n + 1);
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static inline void set_out(task *t, uint32_t status, const uint8_t *p, uint32_t n) {
	free(t->out);
	t->status = status;
	t->out = copy(p, n);
}

static inline void keep(task *t, int slot) {
	free(t->vals[slot]);
	t->vals[slot] = copy((const uint8_t *)t->out, (uint32_t)strlen(t->out));
}

static task **tasks;
static uint32_t ntasks;

static inline task *new_task(uint32_t id, task_fn fn) {
	if (id >= ntasks) {
		uint32_t n = id * 2 + 8;
		tasks = realloc(tasks, n * sizeof *tasks);
		memset(tasks + ntasks, 0, (n - ntasks) * sizeof *tasks);
		ntasks = n;
	}
	task *t = calloc(1, sizeof *t);
	t->id = id;
	t->fn = fn;
	tasks[id] = t;
	return t;
}

static inline void free_task(task *t) {
	tasks[t->id] = 0;
	free(t->out);
	for (int i = 0; i < 12; i++)
		free(t->vals[i]);
	free(t);
}

/* Issues an op; the result points into the message buffer. */
static inline skein_op_result op(task *t, uint32_t kind, const char *name, const char *fn, const void *arg, uint32_t arg_len) {
	skein_op_result r;
	uint32_t n = skein_op(t->id, kind, name, (uint32_t)strlen(name), fn, (uint32_t)strlen(fn), arg, arg_len, msgbuf,
	                      sizeof msgbuf);
	if (skein_decode_op_result(message(n), n, &r) != 0)
		fail("bad op message");
	if (r.state == SKEIN_STATE_ID_ERROR)
		set_out(t, SKEIN_STATUS_ERROR, r.rule.p, r.rule.len); /* the rule, for the tests */
	return r;
}

static inline uint32_t spawn(task *t, const char *name, task_fn fn) {
	skein_op_result r = op(t, SKEIN_OP_SPAWN, name, "", 0, 0);
	if (r.state == SKEIN_STATE_ID_ERROR)
		return 0;
	new_task(r.task, fn);
	return r.promise;
}

static inline uint32_t branch(task *t, uint32_t fork, task_fn fn) {
	uint8_t arg[4];
	skein_put_u32(arg, fork);
	skein_op_result r = op(t, SKEIN_OP_BRANCH, "", "", arg, 4);
	new_task(r.task, fn);
	return r.promise;
}

static inline uint32_t sleep_op(task *t, const char *name, int64_t ns) {
	uint8_t arg[8];
	skein_put_u64(arg, (uint64_t)ns);
	return op(t, SKEIN_OP_SLEEP, name, "sleep", arg, 8).promise;
}

/* await: 1 with the outcome in t->out, or 0: the task waits. */
static inline int await_p(task *t, uint32_t p) {
	skein_wait w;
	uint32_t n = skein_await(t->id, p, msgbuf, sizeof msgbuf);
	if (skein_decode_wait(message(n), n, &w) != 0)
		fail("bad wait message");
	if (!w.ready)
		return 0;
	set_out(t, w.outcome.status, w.outcome.data.p, w.outcome.data.len);
	return 1;
}

/* select: 1 with the index in t->i and the outcome in t->out, or 0. */
static inline int select_p(task *t, const uint32_t *ps, uint32_t n) {
	skein_wait w;
	uint32_t m = skein_select(t->id, ps, n, msgbuf, sizeof msgbuf);
	if (skein_decode_wait(message(m), m, &w) != 0)
		fail("bad wait message");
	if (!w.ready) {
		t->sel = ps, t->n = (int)n;
		return 0;
	}
	t->i = (int)w.index;
	set_out(t, w.outcome.status, w.outcome.data.p, w.outcome.data.len);
	return 1;
}

/* Step results: the outcome is in t->out (DONE), await t->p (AWAIT), or
 * run the body (BODY) or run it again after the backoff (AGAIN). */
enum { STEP_DONE, STEP_AWAIT, STEP_BODY, STEP_AGAIN };

static inline int step_begin(task *t, const char *name, const char *fn) {
	skein_op_result r = op(t, SKEIN_OP_STEP, name, fn, 0, 0);
	t->p = r.promise;
	switch (r.state) {
	case SKEIN_STATE_SETTLED:
		set_out(t, r.outcome.status, r.outcome.data.p, r.outcome.data.len);
		return STEP_DONE;
	case SKEIN_STATE_ID_ERROR:
		return STEP_DONE;
	case SKEIN_STATE_RUN_BODY:
		return STEP_BODY;
	}
	return STEP_AWAIT;
}

static inline int step_end(task *t, uint32_t status, const char *data) {
	uint32_t len = (uint32_t)strlen(data);
	switch (skein_step_done(t->id, t->p, status, (const uint8_t *)data, len)) {
	case SKEIN_STEP_SETTLED:
		set_out(t, status == SKEIN_STATUS_FATAL ? SKEIN_STATUS_ERROR : status, (const uint8_t *)data, len);
		return STEP_DONE;
	case SKEIN_STEP_RETRY:
		return STEP_AGAIN;
	}
	return STEP_AWAIT;
}

#define BEGIN switch (t->pc) { case 0:
#define END } return FINISHED
/* Yields to the host until cond (evaluated once) is true or the task is woken. */
#define YIELD_UNLESS(cond) do { t->pc = __LINE__; if (!(cond)) return WAITING; case __LINE__:; } while (0)
#define AWAIT(p) YIELD_UNLESS(await_p(t, (p)))
#define SELECT(ps, n) YIELD_UNLESS(select_p(t, (ps), (n)))
#define YIELD() YIELD_UNLESS(0)
/* A step whose body returns the JSON value json at once. */
#define STEP(name, fn, json) do { t->i = step_begin(t, (name), (fn)); \
	if (t->i == STEP_BODY) t->i = step_end(t, SKEIN_STATUS_OK, (json)); \
	if (t->i == STEP_AWAIT) AWAIT(t->p); } while (0)
#define RETURN(status, text) do { const char *s_ = (text); skein_task_done(t->id, (status), (const uint8_t *)s_, (uint32_t)strlen(s_)); return FINISHED; } while (0)

/* Guest output (README §2): stdout and stderr reach host.Config.GuestOutput. */
static inline void say(const char *line) {
	if (write(1, line, strlen(line)) < 0)
		fail("write");
}

typedef struct {
	const char *name;
	task_fn fn;
} workflow;

static char *input; /* the run's input JSON */

/* Runs the invocation the host asks for; never returns. */
static inline void run(const workflow *wfs, int n) {
	if (skein_hello(SKEIN_ABI_VERSION) != SKEIN_ABI_VERSION)
		fail("ABI version");
	char names[512] = "";
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(names, "\n");
		strcat(names, wfs[i].name);
	}
	skein_workflows(names, (uint32_t)strlen(names));
	skein_invocation_msg inv;
	uint32_t m = skein_invocation(msgbuf, sizeof msgbuf);
	if (skein_decode_invocation(message(m), m, &inv) != 0)
		fail("bad invocation message");
	if (inv.mode != SKEIN_MODE_RUN)
		exit(0);
	task_fn root = 0;
	for (int i = 0; i < n; i++)
		if (strlen(wfs[i].name) == inv.workflow.len && memcmp(wfs[i].name, inv.workflow.p, inv.workflow.len) == 0)
			root = wfs[i].fn;
	if (!root)
		fail("unknown workflow");
	input = copy(inv.input.p, inv.input.len);
	new_task(1, root);
	for (;;) {
		skein_resume r;
		uint32_t k = skein_next(msgbuf, sizeof msgbuf);
		if (skein_decode_resume(message(k), k, &r) != 0)
			fail("bad resume message");
		task *t = r.task < ntasks ? tasks[r.task] : 0;
		if (!t)
			fail("unknown task");
		if (r.kind == SKEIN_RESUME_WAKE && r.promise != 0) {
			set_out(t, r.outcome.status, r.outcome.data.p, r.outcome.data.len);
			for (int i = 0; t->sel && i < t->n; i++)
				if (t->sel[i] == r.promise)
					t->i = i;
		}
		t->sel = 0;
		if (t->fn(t) == FINISHED)
			free_task(t);
	}
}

#endif
