// Package regcheck checks a history of operations on a registry of
// items by key (the lookup service's, as clients see it) for
// linearizability, with porcupine (the checker etcd's robustness tests
// use). A write's outcome may be unknown (the request timed out, the node
// died answering): it may then have taken effect at any point after it
// began, or never. A read may be allowed to reflect the registry as it
// was up to Slack before it began: the staleness bound of a cluster's
// reads at a node that does not hold the store.
package regcheck

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does.
type Kind int

const (
	// Put registers (or registers again) the item Key with Value.
	Put Kind = iota
	// Delete cancels the item Key.
	Delete
	// Get looks up Key: Found, with Value, or not.
	Get
	// Change sets the attributes of the item Key to Value if it is
	// there: Found says it was (done), or was not (done, nothing changed).
	Change
)

func (k Kind) String() string { return [...]string{"put", "delete", "get", "change"}[k] }

// Outcome is what the client learnt of an operation.
type Outcome int

const (
	// Done: acknowledged (a read: answered).
	Done Outcome = iota
	// Failed: refused before it could take effect (a definite error, a
	// request never sent): it is left out.
	Failed
	// Unknown: it may or may not have taken effect.
	Unknown
)

// Op is one client operation as recorded.
type Op struct {
	Client     int
	Kind       Kind
	Key, Value string
	Found      bool
	Outcome    Outcome
	Start, End time.Time
	// Slack, for a read, is how long before Start the state it reflects
	// may be.
	Slack time.Duration
}

func (o Op) String() string {
	switch o.Kind {
	case Get:
		if !o.Found {
			return fmt.Sprintf("client %d: get %s -> none", o.Client, o.Key)
		}
		return fmt.Sprintf("client %d: get %s -> %s", o.Client, o.Key, o.Value)
	case Put:
		return fmt.Sprintf("client %d: put %s = %s (%v)", o.Client, o.Key, o.Value, o.Outcome)
	case Change:
		return fmt.Sprintf("client %d: change %s to %s (%v, there %v)", o.Client, o.Key, o.Value, o.Outcome, o.Found)
	}
	return fmt.Sprintf("client %d: delete %s (%v)", o.Client, o.Key, o.Outcome)
}

func (o Outcome) String() string { return [...]string{"done", "failed", "unknown"}[o] }

type input struct {
	kind       Kind
	key, value string
}

type output struct {
	found   bool
	value   string
	unknown bool // the outcome of a write is not known
}

// model is the registry, one key at a time: the state is the key's
// value, "" for none.
func model() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(input).key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() any { return "" },
		Step: func(state, in, out any) (bool, any) {
			s, i, o := state.(string), in.(input), out.(output)
			switch i.kind {
			case Put:
				return true, i.value
			case Delete:
				return true, ""
			case Change:
				switch {
				case o.unknown && s == "": // nothing to change
					return true, s
				case o.unknown, o.found:
					return s != "", i.value
				default: // the item was not there
					return s == "", s
				}
			}
			if !o.found {
				return s == "", s
			}
			return s == o.value, s
		},
		DescribeOperation: func(in, out any) string {
			i := in.(input)
			switch i.kind {
			case Get:
				o := out.(output)
				if !o.found {
					return "get " + i.key + " -> none"
				}
				return "get " + i.key + " -> " + o.value
			case Put:
				return "put " + i.key + " = " + i.value
			case Change:
				return "change " + i.key + " to " + i.value
			}
			return "delete " + i.key
		},
	}
}

// Result is what Check found.
type Result struct {
	// Checked counts the operations checked (failed ones are left out).
	Checked int
	// Linearizable says the history is; TimedOut, that the checker ran
	// out of time before it could say (neither proof nor violation).
	Linearizable, TimedOut bool
}

// Check checks ops, within timeout.
//
// Writes of unknown outcome are what makes the search long: each may
// take effect at any point after it began, so each stays open against
// every later operation on its key. Two things known of them shorten it,
// as etcd's robustness tests do. A write whose value a read saw took
// effect before that read ended (values are unique): it ends there. A
// write no read saw is left out first: if the history is linearizable
// without it, it is with it too (it then takes effect after everything,
// where an unknown write is always allowed). Only when that shorter
// history is not linearizable is the whole one searched.
func Check(ops []Op, timeout time.Duration) Result {
	deadline := time.Now().Add(timeout)
	full := history(ops, false)
	short := history(ops, true)
	if porcupine.CheckOperationsTimeout(model(), short, timeout) == porcupine.Ok {
		return Result{Checked: len(full), Linearizable: true}
	}
	r := porcupine.CheckOperationsTimeout(model(), full, max(time.Until(deadline), time.Millisecond))
	return Result{Checked: len(full), Linearizable: r == porcupine.Ok, TimedOut: r == porcupine.Unknown}
}

// history is ops for porcupine, failed ones left out; with unseen, the
// writes of unknown outcome no read saw are left out too.
func history(ops []Op, unseen bool) []porcupine.Operation {
	type seenKey struct{ key, value string }
	seenBy := map[seenKey]int64{} // the earliest end of a read that saw a value
	for _, o := range ops {
		if o.Kind == Get && o.Found && o.Outcome == Done {
			k, end := seenKey{o.Key, o.Value}, o.End.UnixNano()
			if e, ok := seenBy[k]; !ok || end < e {
				seenBy[k] = end
			}
		}
	}
	var h []porcupine.Operation
	for _, o := range ops {
		if o.Outcome == Failed {
			continue
		}
		call, ret := o.Start.UnixNano(), o.End.UnixNano()
		if o.Kind == Get {
			call -= o.Slack.Nanoseconds()
		} else if o.Outcome == Unknown {
			// Taken effect at any point from its start, or never (its
			// point then after every other operation's); before the end
			// of a read that saw its value.
			ret = math.MaxInt64
			seen, ok := seenBy[seenKey{o.Key, o.Value}]
			switch {
			case ok && o.Kind != Delete:
				ret = max(seen, call)
			case unseen:
				continue
			}
		}
		h = append(h, porcupine.Operation{ClientId: o.Client, Input: input{kind: o.Kind, key: o.Key, value: o.Value},
			Call: call, Output: output{found: o.Found, value: o.Value, unknown: o.Outcome == Unknown}, Return: ret})
	}
	return h
}
