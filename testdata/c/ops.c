/*
 * ops.c: a C guest that uses every op kind (step, call, sleep, promise,
 * child, spawn, fork, branch) and every other host function: select,
 * body_sleep, real_now, real_rand, op_options (a timeout and a retry
 * policy), outcomes (long enough to need take), canceled. The workflow
 * ops returns what each gave as a JSON object; double is its child.
 */
#include "glue.h"

#define MS 1000000LL

static void keep_text(task *t, int slot, const char *text) {
	free(t->vals[slot]);
	t->vals[slot] = copy((const uint8_t *)text, (uint32_t)strlen(text));
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The keys of the outcomes settled so far, sorted, joined by ",". */
static void outcome_keys(char *out, size_t cap) {
	uint32_t n = skein_outcomes(msgbuf, sizeof msgbuf);
	const uint8_t *msg = message(n);
	skein_reader r = skein_reader_of(msg, n);
	uint32_t count = skein_read_u32(&r);
	char *keys[64];
	uint32_t k = 0;
	skein_outcome_entry e;
	for (uint32_t i = 0; i < count && k < 64 && skein_next_outcome(&r, &e) == 0; i++)
		keys[k++] = copy(e.key.p, e.key.len);
	qsort(keys, k, sizeof keys[0], cmp);
	out[0] = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (i)
			strncat(out, ",", cap - strlen(out) - 1);
		strncat(out, keys[i], cap - strlen(out) - 1);
		free(keys[i]);
	}
}

static int spawned(task *t) {
	BEGIN;
	STEP("", "one", "1");
	RETURN(t->status, t->out);
	END;
}

static int branch_fn(task *t) {
	BEGIN;
	STEP("", "branch", "\"b\"");
	RETURN(t->status, t->out);
	END;
}

static int ops(task *t) {
	BEGIN;
	/* A step whose body reads real time and randomness, and waits. */
	t->i = step_begin(t, "body", "body");
	if (t->i == STEP_BODY) {
		uint8_t b[16] = {0};
		skein_real_rand(b, sizeof b);
		int any = 0;
		for (int k = 0; k < 16; k++)
			any |= b[k];
		t->n = skein_real_now() > 1600000000LL * 1000000000LL && any;
		skein_body_sleep(t->id, 5 * MS);
		YIELD();
		t->i = step_end(t, SKEIN_STATUS_OK, t->n ? "true" : "false");
	}
	if (t->i == STEP_AWAIT)
		AWAIT(t->p);
	keep(t, 0);
	/* A call with a timeout. */
	{
		uint8_t o[SKEIN_OP_OPTIONS_FIXED] = {0};
		skein_put_u64(o + 28, 10000 * MS);
		skein_op_options(t->id, o, sizeof o);
	}
	t->p = op(t, SKEIN_OP_CALL, "", "echo", input, (uint32_t)strlen(input)).promise;
	AWAIT(t->p);
	keep(t, 1);
	/* A timer and a promise nobody settles: select picks the timer. */
	t->handles[0] = sleep_op(t, "", 20 * MS);
	t->handles[1] = op(t, SKEIN_OP_PROMISE, "approval", "promise", 0, 0).promise;
	t->handles[2] = t->handles[1], t->handles[3] = t->handles[0];
	SELECT(&t->handles[2], 2);
	snprintf(t->buf, sizeof t->buf, "%d", t->i);
	keep_text(t, 2, t->buf);
	AWAIT(t->handles[0]);
	keep(t, 3);
	t->p = op(t, SKEIN_OP_CHILD, "", "double", "21", 2).promise;
	AWAIT(t->p);
	keep(t, 4);
	t->p = spawn(t, "", spawned);
	AWAIT(t->p);
	keep(t, 5);
	/* A named fork with two branches. */
	t->p = op(t, SKEIN_OP_FORK, "fan", "", 0, 0).promise;
	t->handles[4] = branch(t, t->p, branch_fn);
	t->handles[5] = branch(t, t->p, branch_fn);
	AWAIT(t->handles[4]);
	keep(t, 6);
	AWAIT(t->handles[5]);
	/* A step retried by policy: two attempts, both fail. */
	{
		uint8_t o[SKEIN_OP_OPTIONS_FIXED] = {0};
		skein_put_u32(o, 2);          /* max_attempts */
		skein_put_u64(o + 4, 1 * MS); /* initial_backoff */
		skein_put_u32(o + 20, 2000);  /* multiplier */
		skein_op_options(t->id, o, sizeof o);
	}
	t->i = step_begin(t, "", "flaky");
	while (t->i == STEP_BODY || t->i == STEP_AGAIN) {
		if (t->i == STEP_AGAIN)
			YIELD(); /* the backoff */
		t->i = step_end(t, SKEIN_STATUS_ERROR, "flaky");
	}
	if (t->i == STEP_AWAIT)
		AWAIT(t->p);
	snprintf(t->buf, sizeof t->buf, "%u:%s", t->status, t->out);
	keep_text(t, 7, t->buf);
	/* A name that breaks a rule: nothing is issued. */
	STEP("a.b", "body", "1");
	snprintf(t->buf, sizeof t->buf, "%u:%s", t->status, t->out);
	keep_text(t, 8, t->buf);
	{
		char keys[400];
		outcome_keys(keys, sizeof keys);
		keep_text(t, 9, keys);
	}
	snprintf(t->buf, sizeof t->buf,
	         "{\"step\":%s,\"call\":%s,\"select\":%s,\"sleep\":%s,\"child\":%s,\"spawn\":%s,\"branch\":%s,"
	         "\"retry\":\"%s\",\"iderror\":\"%s\",\"outcomes\":\"%s\",\"canceled\":%u}",
	         t->vals[0], t->vals[1], t->vals[2], t->vals[3], t->vals[4], t->vals[5], t->vals[6], t->vals[7], t->vals[8],
	         t->vals[9], skein_canceled(msgbuf, sizeof msgbuf));
	RETURN(SKEIN_STATUS_OK, t->buf);
	END;
}

static int double_fn(task *t) {
	BEGIN;
	snprintf(t->buf, sizeof t->buf, "%d", 2 * atoi(input));
	RETURN(SKEIN_STATUS_OK, t->buf);
	END;
}

int main(void) {
	static const workflow wfs[] = {{"double", double_fn}, {"ops", ops}};
	run(wfs, 2);
	return 1;
}
