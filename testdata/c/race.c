/*
 * race.c: the reference race of the README (examples/race in Go) as a C
 * guest: two chains of steps run concurrently, the one that starts first
 * finishes last, and a pending timer forces the run to be replayed. Keys
 * 1, t2.1, t2.2, t3.1, t3.2; result ["s2:slow-result","f2:fast-result"].
 */
#include "glue.h"

#define MS 1000000LL

/* mark: the step "mark" whose value is "prefix:" and the string in t->out. */
static void mark_value(task *t, const char *prefix) {
	size_t n = strlen(t->out);
	snprintf(t->buf, sizeof t->buf, "\"%s:%.*s\"", prefix, (int)(n - 2), t->out + 1);
}

static int chain_a(task *t) { /* scope t2 */
	BEGIN;
	t->i = step_begin(t, "", "slow");
	if (t->i == STEP_BODY) {
		skein_body_sleep(t->id, 100 * MS); /* loses the live race */
		YIELD();
		t->i = step_end(t, SKEIN_STATUS_OK, "\"slow-result\"");
	}
	if (t->i == STEP_AWAIT)
		AWAIT(t->p);
	if (t->status != SKEIN_STATUS_OK)
		RETURN(SKEIN_STATUS_ERROR, t->out);
	mark_value(t, "s2");
	STEP("", "mark", t->buf);
	RETURN(t->status, t->out);
	END;
}

static int chain_b(task *t) { /* scope t3 */
	BEGIN;
	STEP("", "fast", "\"fast-result\"");
	if (t->status != SKEIN_STATUS_OK)
		RETURN(SKEIN_STATUS_ERROR, t->out);
	mark_value(t, "f2");
	STEP("", "mark", t->buf);
	RETURN(t->status, t->out);
	END;
}

static int race(task *t) {
	BEGIN;
	say("race: an execution starts\n");
	t->handles[0] = sleep_op(t, "", 200 * MS); /* key 1 */
	t->handles[1] = spawn(t, "", chain_a);
	t->handles[2] = spawn(t, "", chain_b);
	AWAIT(t->handles[1]);
	if (t->status != SKEIN_STATUS_OK)
		RETURN(SKEIN_STATUS_ERROR, t->out);
	keep(t, 0);
	AWAIT(t->handles[2]);
	if (t->status != SKEIN_STATUS_OK)
		RETURN(SKEIN_STATUS_ERROR, t->out);
	keep(t, 1);
	AWAIT(t->handles[0]);
	snprintf(t->buf, sizeof t->buf, "[%s,%s]", t->vals[0], t->vals[1]);
	fprintf(stderr, "race: done\n");
	RETURN(SKEIN_STATUS_OK, t->buf);
	END;
}

int main(void) {
	static const workflow wfs[] = {{"race", race}};
	run(wfs, 1);
	return 1;
}
