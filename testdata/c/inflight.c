/*
 * inflight.c: the checker's rule on ops issued but never settled, in C
 * (testdata/workflows/inflight in Go). lost: a 10ms timer wins a select
 * over a task whose step body takes 500ms, so the run ends with that step
 * in flight; it returns the winner, 0. broken: a step body sets a global
 * that workflow code reads, so a replay (which does not run the body)
 * issues a step the live run never issued.
 */
#include "glue.h"

#define MS 1000000LL

static int worker(task *t) { /* scope worker */
	BEGIN;
	t->i = step_begin(t, "", "compute");
	if (t->i == STEP_BODY) {
		skein_body_sleep(t->id, 500 * MS);
		YIELD();
		t->i = step_end(t, SKEIN_STATUS_OK, "\"computed\"");
	}
	if (t->i == STEP_AWAIT)
		AWAIT(t->p);
	RETURN(t->status, t->out);
	END;
}

static int lost(task *t) {
	BEGIN;
	t->handles[0] = sleep_op(t, "", 10 * MS);
	t->handles[1] = spawn(t, "worker", worker);
	SELECT(&t->handles[0], 2);
	snprintf(t->buf, sizeof t->buf, "%d", t->i);
	RETURN(SKEIN_STATUS_OK, t->buf);
	END;
}

static int ran; /* set by a step body: the bug broken shows */

static int broken(task *t) {
	BEGIN;
	t->i = step_begin(t, "", "a");
	if (t->i == STEP_BODY) {
		ran = 1;
		t->i = step_end(t, SKEIN_STATUS_OK, "1");
	}
	if (t->i == STEP_AWAIT)
		AWAIT(t->p);
	if (!ran) {
		STEP("", "only-on-replay", "\"replayed\"");
		RETURN(t->status, t->out);
	}
	RETURN(SKEIN_STATUS_OK, "\"live\"");
	END;
}

int main(void) {
	static const workflow wfs[] = {{"lost", lost}, {"broken", broken}};
	run(wfs, 2);
	return 1;
}
