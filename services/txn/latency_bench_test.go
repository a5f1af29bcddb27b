package txn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jinid/jinid/services/apitypes"
)

// slowVoters are participants that take prepareTook to vote PREPARED
// (or, asked prepareAndCommit, COMMITTED) and answer the rest at once.
type slowVoters struct{ prepareTook time.Duration }

func (s slowVoters) Call(ctx context.Context, _ Participant, op apitypes.ParticipantOp, _ string, _ int) (apitypes.Vote, error) {
	switch op {
	case apitypes.OpPrepare, apitypes.OpPrepareAndCommit:
		select {
		case <-time.After(s.prepareTook):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if op == apitypes.OpPrepareAndCommit {
			return apitypes.VoteCommitted, nil
		}
		return apitypes.VotePrepared, nil
	}
	return 0, nil
}

// BenchmarkCommitLatency: one commit (with waitFor, so every participant
// has heard commit) of a transaction with 1, 3, 10 and 100 participants
// whose prepares take 0 or 100 ms, the decision on the store (an fsync).
// It should take one prepare round (the slowest voter), the decision's
// write and one commit round, whatever the number of participants.
func BenchmarkCommitLatency(b *testing.B) {
	for _, prepare := range []time.Duration{0, 100 * time.Millisecond} {
		for _, n := range []int{1, 3, 10, 100} {
			b.Run(fmt.Sprintf("prepare=%v/participants=%d", prepare, n), func(b *testing.B) {
				st, _ := openStore(b)
				e := New(Config{Caller: slowVoters{prepare}, Journal: NewStoreJournal(st)})
				defer e.Shutdown(b.Context())
				for b.Loop() {
					id := e.Create()
					for p := range n {
						e.Join(id, Participant{URL: fmt.Sprint("p", p), CrashCount: 1})
					}
					if err := e.Commit(b.Context(), id, time.Minute); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/commit")
			})
		}
	}
}
