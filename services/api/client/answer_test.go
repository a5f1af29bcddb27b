package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

// An answer is read to the client's bound and no further: a server
// streaming one endless JSON string (a fake lookup service on the LAN)
// costs the client that much, and it says so; an answer within the
// bound reads.
func TestAnswerBounded(t *testing.T) {
	var sent int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("small") != "" || strings.HasSuffix(r.URL.Path, "/v1/lookup") {
			w.Write([]byte(`{"serviceID":"5a7e1c00-0000-4000-8000-000000000001","groups":[]}`))
			return
		}
		w.Write([]byte(`{"items":[{"serviceID":"`))
		chunk := []byte(strings.Repeat("x", 64<<10))
		for sent < 64<<20 { // stops by itself: 64 MiB at most
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil, WithMaxAnswer(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.QueryItems(ctx, apitypes.Template{}, 10)
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Fatalf("an endless answer: %v, want ErrAnswerTooLarge", err)
	}
	if _, err := c.Lookup(ctx); err != nil {
		t.Fatalf("an answer within the bound: %v", err)
	}
}

// By default the bound is the answer's kind's: a page (a query's items)
// is read to DefaultMaxAnswer, one thing (an item) to DefaultMaxOne.
func TestAnswerBoundByKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"items":[{"serviceID":"`))
		chunk := []byte(strings.Repeat("x", 64<<10))
		for sent := 0; sent < 32<<20; sent += len(chunk) { // stops by itself
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.QueryItems(ctx, apitypes.Template{}, 10); !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 8388608 bytes") {
		t.Errorf("a page: %v, want ErrAnswerTooLarge at 8 MiB", err)
	}
	if _, err := c.Get(ctx, "5a7e1c00-0000-4000-8000-000000000001"); !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Errorf("one item: %v, want ErrAnswerTooLarge at 1 MiB", err)
	}
}

// A server that takes the request and closes the connection (what the
// Jini discovery port does with HTTP; a daemon stopping) is named as
// such, NoAnswerError, never a raw EOF.
func TestNoAnswer(t *testing.T) {
	addr := testenv.Serve(t, func(c net.Conn) {
		c.Read(make([]byte, 512))
		c.Close()
	})
	c, err := New("http://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Lookup(t.Context())
	var na *NoAnswerError
	if !errors.As(err, &na) || !strings.Contains(err.Error(), "not jinid's API") {
		t.Fatalf("%v, want a NoAnswerError", err)
	}
}
