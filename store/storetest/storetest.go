// Package storetest is the behaviour suite every store.Store backend must
// pass. A backend's tests call Run with a function that opens a fresh,
// empty store.
package storetest

import (
	"testing"

	"github.com/skeinrun/skein/store"
)

// Run runs the suite as subtests of t. open must return a new, empty store
// each time it is called; Run closes it when the subtest ends (so Close
// must tolerate being called twice).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"ModulePutGet", testModulePutGet},
		{"ModuleOwners", testModuleOwners},
		{"RunsNamespace", testRunsNamespace},
		{"ModuleIdempotentPut", testModuleIdempotentPut},
		{"ModuleByNameMostRecent", testModuleByNameMostRecent},
		{"ModuleNames", testModuleNames},
		{"ModulesListWithoutBytes", testModulesList},
		{"ModuleNotFound", testModuleNotFound},
		{"CreateRun", testCreateRun},
		{"CreateRunExisting", testCreateRunExisting},
		{"RunNotFound", testRunNotFound},
		{"RunsFilter", testRunsFilter},
		{"RunsOrder", testRunsOrder},
		{"AttrDecls", testAttrDecls},
		{"RunAttrs", testRunAttrs},
		{"RunsAttrs", testRunsAttrs},
		{"RunsAttrsRefused", testRunsAttrsRefused},
		{"RunsSelect", testRunsSelect},
		{"BatchJobs", testBatchJobs},
		{"Namespaces", testNamespaces},
		{"NamespacesInvalid", testNamespacesInvalid},
		{"NamespaceInUse", testNamespaceInUse},
		{"Keys", testKeys},
		{"KeyRevokeRotate", testKeyRevokeRotate},
		{"BatchJobLease", testBatchJobLease},
		{"BatchJobClaimConcurrent", testBatchJobClaimConcurrent},
		{"CommitRoundTrip", testCommitRoundTrip},
		{"CommitLargeBatch", testCommitLargeBatch},
		{"OutcomeUpsert", testOutcomeUpsert},
		{"OutcomesOrder", testOutcomesOrder},
		{"DueRuns", testDueRuns},
		{"CommitUnknownRunUpdate", testCommitUnknownRunUpdate},
		{"CommitConcurrent", testCommitConcurrent},
		{"CommitBadBatchFailsAlone", testCommitBadBatchFailsAlone},
		{"SettleOnce", testSettleOnce},
		{"SettleUnknown", testSettleUnknown},
		{"SettlementsUndelivered", testSettlementsUndelivered},
		{"BatchSettlements", testBatchSettlements},
		{"RequestCancel", testRequestCancel},
		{"PauseRun", testPauseRun},
		{"PauseNotDue", testPauseNotDue},
		{"ParentEnded", testParentEnded},
		{"TraceParent", testTraceParent},
		{"DueRunsSettlementsCancelDeadline", testDueRunsWake},
		{"DueRunsTransitions", testDueRunsTransitions},
		{"DueRunsCreatedCanceled", testDueRunsCreatedCanceled},
		{"SettleRacesSuspend", testSettleRacesSuspend},
		{"PendingNeverReplacesSettled", testPendingNeverReplacesSettled},
		{"Timeline", testTimeline},
		{"LeaseClaimDueOnly", testLeaseClaimDueOnly},
		{"LeaseClaimConcurrent", testLeaseClaimConcurrent},
		{"LeaseExpiredReclaim", testLeaseExpiredReclaim},
		{"LeaseStaleRenewRelease", testLeaseStaleRenewRelease},
		{"LeaseFencedCommit", testLeaseFencedCommit},
		{"LeaseFencedCommitFailsAlone", testLeaseFencedCommitFailsAlone},
		{"LeaseHistory", testLeaseHistory},
		{"LeaseReleaseInCommit", testLeaseReleaseInCommit},
		{"ClaimRun", testClaimRun},
		{"ClaimRunConcurrent", testClaimRunConcurrent},
		{"CreateClaimedRun", testCreateClaimedRun},
		{"WriteOnceOutcome", testWriteOnceOutcome},
		{"WriteOnceRun", testWriteOnceRun},
		{"WriteOnceConcurrent", testWriteOnceConcurrent},
		{"JournalClosed", testJournalClosed},
		{"JournalClosedRace", testJournalClosedRace},
		{"TaskQueueInCommit", testTaskQueueInCommit},
		{"TaskQueueClaimed", testTaskQueueClaimed},
		{"TaskClaim", testTaskClaim},
		{"TaskFairness", testTaskFairness},
		{"TaskClaimConcurrent", testTaskClaimConcurrent},
		{"TasksOrder", testTasksOrder},
		{"TaskQueues", testTaskQueues},
		{"TaskFencedCommit", testTaskFencedCommit},
		{"TaskHeartbeat", testTaskHeartbeat},
		{"TaskEndSettle", testTaskEndSettle},
		{"TaskEndRetry", testTaskEndRetry},
		{"TaskEndExpired", testTaskEndExpired},
		{"ExpiredTasksOrder", testExpiredTasksOrder},
		{"TaskCancel", testTaskCancel},
		{"TaskEndRacesSuspend", testTaskEndRacesSuspend},
		{"ContinueAtomic", testContinueAtomic},
		{"ResetRun", testResetRun},
		{"Schedules", testSchedules},
		{"ScheduleUpdateConcurrent", testScheduleUpdateConcurrent},
		{"Hooks", testHooks},
		{"HookDeliveries", testHookDeliveries},
		{"PromiseSchema", testPromiseSchema},
		{"ModuleInputSchemas", testModuleInputSchemas},
		{"PruneRuns", testPruneRuns},
		{"PruneBatches", testPruneBatches},
		{"PruneFamilies", testPruneFamilies},
		{"PruneScheduleSlot", testPruneScheduleSlot},
		{"DeleteRun", testDeleteRun},
		{"Texts", testTexts},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}
