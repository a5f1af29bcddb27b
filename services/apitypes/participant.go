package apitypes

import "strconv"

// The transaction participant callback protocol (API.md, "Transaction
// manager"): what the manager POSTs to a participant's URL and what the
// participant answers. The manager (services/txn) and the participant
// library for Go programs (services/txn/participant) share it; the
// library links nothing of the manager.

// Vote is a participant's answer to prepare or prepareAndCommit (TX.2.6);
// VoteCommitted answers prepareAndCommit only. The protocol spells each
// as String does.
type Vote int

// The votes.
const (
	VoteNotChanged Vote = iota + 1
	VotePrepared
	VoteAborted
	VoteCommitted
)

// String is the vote as the callback protocol spells it.
func (v Vote) String() string {
	switch v {
	case VoteNotChanged:
		return "NOTCHANGED"
	case VotePrepared:
		return "PREPARED"
	case VoteAborted:
		return "ABORTED"
	case VoteCommitted:
		return "COMMITTED"
	}
	return "Vote(" + strconv.Itoa(int(v)) + ")"
}

// ParticipantOp is a call the manager makes on a participant.
type ParticipantOp string

// The participant operations (TX.2.6).
const (
	OpPrepare          ParticipantOp = "prepare"
	OpCommit           ParticipantOp = "commit"
	OpAbort            ParticipantOp = "abort"
	OpPrepareAndCommit ParticipantOp = "prepareAndCommit"
)

// ParticipantCall is what the manager POSTs to a participant.
type ParticipantCall struct {
	Op      ParticipantOp `json:"op"`
	Manager string        `json:"manager"`
	ID      string        `json:"id"`
	Attempt int           `json:"attempt"`
}

// ParticipantAnswer is a participant's answer to prepare or
// prepareAndCommit.
type ParticipantAnswer struct {
	Vote string `json:"vote"`
}
