package testenv

import (
	"strings"
	"sync"
)

// Buffer collects what a test's processes and goroutines write (a
// command's output, a logger's lines) while the test reads it: a
// strings.Builder that many may use at once.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
