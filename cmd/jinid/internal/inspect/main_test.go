package inspect

import (
	"io"
	"testing"

	"go.uber.org/goleak"
)

// Every test leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readAll decodes a capture, handing the records to emit.
func readAll(r io.Reader, emit func(Record)) error { return ReadCapture(r, NewDecoder(emit)) }
