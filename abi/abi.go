// Package abi is the contract between a skein guest (a workflow module) and
// the skein host: the import module name, the host function names, status
// codes, op kinds and the binary layout of every variable-length message.
// README.md in this folder specifies it in prose for authors of guests in
// other languages.
//
// The package has no dependencies so that both the host and the Go guest
// SDK (built for wasip1) can import it.
package abi

// Version is the ABI version this package describes. A guest announces the
// version it speaks with FnHello; the host rejects any other.
const Version = 1

// Module is the wasm import module name of every skein host function.
const Module = "skein"

// Host function names, all in import module Module.
const (
	FnHello      = "hello"
	FnWorkflows  = "workflows"
	FnInvocation = "invocation"
	FnTake       = "take"
	FnNext       = "next"
	FnOp         = "op"
	FnStepDone   = "step_done"
	FnAwait      = "await"
	FnSelect     = "select"
	FnTaskDone   = "task_done"
	FnBodySleep  = "body_sleep"
	FnRealNow    = "real_now"
	FnRealRand   = "real_rand"
	FnOutcomes   = "outcomes"
	FnOpOptions  = "op_options"      // options (retry, timeout) for the task's next op
	FnCanceled   = "canceled"        // the run's cancellation reason, if delivered
	FnContinue   = "continue_as_new" // end the run as continued; its successor starts with the input given
	// FnInputSchema gives the JSON Schema of a workflow's input, between
	// FnWorkflows and FnInvocation (optional; the host checks a run's
	// input against it at start). It returns 1 when the host keeps the
	// schema (describe mode), 0 when it ignores it (a run).
	FnInputSchema = "input_schema"
	// FnFeed hands the running task the recorded outcomes that its next
	// unnamed ops would receive on replay, so that it can take them
	// without an FnOp call each, and applies the ones it took from the
	// last feed (optional; abi/README.md, "feed").
	FnFeed = "feed"
)

// FeedHeader is the length of the FnFeed message's header: u8 replaying,
// then u32 count.
const FeedHeader = 5

// OpKind is the kind of a durable operation (the kind argument of FnOp).
type OpKind uint32

// Op kinds.
const (
	OpStep    OpKind = 1 // guest body, memoized
	OpCall    OpKind = 2 // host activity
	OpSleep   OpKind = 3 // durable timer; arg: 8-byte little-endian duration in ns
	OpPromise OpKind = 4 // durable promise settled from outside; arg: the JSON Schema of its value, or empty for none
	OpChild   OpKind = 5 // child workflow; fn: workflow name; arg: input JSON
	OpSpawn   OpKind = 6 // spawn a task (skein.Go); no outcome row
	OpFork    OpKind = 7 // open a parallel fork; no outcome row
	OpBranch  OpKind = 8 // spawn branch task of a fork; arg: 4-byte fork handle
	OpAttrs   OpKind = 9 // set search attributes; arg: a JSON object of values by name; settled by the host at once
)

// ParseOpKind returns the kind whose String is name, and false for
// none.
func ParseOpKind(name string) (OpKind, bool) {
	for k := OpStep; k <= OpAttrs; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// String returns the kind's name as stored in outcome records.
func (k OpKind) String() string {
	switch k {
	case OpStep:
		return "step"
	case OpCall:
		return "call"
	case OpSleep:
		return "sleep"
	case OpPromise:
		return "promise"
	case OpChild:
		return "child"
	case OpSpawn:
		return "spawn"
	case OpFork:
		return "fork"
	case OpBranch:
		return "branch"
	case OpAttrs:
		return "attrs"
	}
	return "unknown"
}

// Status of an outcome or of a finished task (FnStepDone, FnTaskDone, and
// the status byte of an encoded Outcome).
const (
	StatusOK    uint32 = 1 // value is JSON
	StatusError uint32 = 2 // value is the error text
	StatusPanic uint32 = 3 // FnTaskDone only: value is the panic value and stack
	StatusFatal uint32 = 4 // FnStepDone only: an error the step's retry policy must not retry
)

// OpState says what the guest does after FnOp.
const (
	StatePending uint8 = 0 // await the promise
	StateSettled uint8 = 1 // the outcome follows in the message
	StateRunBody uint8 = 2 // run the step body, then report with FnStepDone
	StateIDError uint8 = 3 // the name broke a rule; the message carries the error; nothing was issued
)

// FnStepDone results.
const (
	StepSettled uint32 = 0 // the outcome is settled; continue
	StepAwait   uint32 = 1 // the outcome is held; await the promise
	StepRetry   uint32 = 2 // the attempt failed and is retried: yield (the backoff), then run the body again
)

// ParentClose policies of OpOptions (a child op): what the end of the
// parent does to the child run when it has not ended. 0 means cancel.
const (
	ParentCloseCancel  uint32 = 1 // the parent's end cancels the child
	ParentCloseAbandon uint32 = 2 // the parent's end leaves the child running, abandoned
)

// OnExhausted policies of OpOptions (a step or call with a retry
// policy): what the host does when its retries run out.
const (
	OnExhaustedFail  uint32 = 0 // the op fails with the last attempt's error (the default)
	OnExhaustedPause uint32 = 1 // the op stays pending and the run is paused; once unpaused the op gets a fresh set of attempts
)

// Invocation modes.
const (
	ModeRun      uint8 = 1 // run the named workflow
	ModeDescribe uint8 = 2 // only announce workflows (the host ends the module inside FnInvocation)
)

// Dispatch kinds in a Resume message.
const (
	ResumeStart uint8 = 1 // start the task's function (first run)
	ResumeWake  uint8 = 2 // continue a task blocked in FnAwait, FnSelect or FnBodySleep
)
