package unicast

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
)

func TestDiscoverAnswer(t *testing.T) {
	id := discovery.ServiceID{9}
	for _, version := range []int{1, 2} {
		client, server := net.Pipe()
		done := make(chan error, 1)
		go func() {
			defer server.Close()
			done <- Answer(t.Context(), server, func(q Request) (*Response, error) {
				return &Response{Version: q.Version, Format: discovery.PlaintextFormat, Host: "192.0.2.1", Port: 4160,
					Groups: []string{"a"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: id}}}, nil
			})
		}()
		resp, err := Discover(t.Context(), client, version)
		client.Close()
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("v%d answer: %v", version, err)
		}
		if !slices.Equal(resp.Groups, []string{"a"}) || resp.Registrar.Descriptor.ServiceID != id {
			t.Fatalf("v%d: %+v", version, resp)
		}
	}
}

func TestDiscoverTimesOut(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	go func() { // reads the request, never answers
		b := make([]byte, 100)
		server.Read(b)
	}()
	_, err := Discover(ctx, client, 2)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline", err)
	}
}

func TestAnswerNoCommonFormat(t *testing.T) {
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		Answer(t.Context(), server, func(Request) (*Response, error) { t.Error("respond called"); return nil, nil })
	}()
	q, _ := Request{Version: 2, Formats: []discovery.FormatID{discovery.FormatIDOf(discovery.SSLFormatName)}}.Append(nil)
	client.Write(q)
	_, err := ReadResponse(client, DefaultMaxResponseSize)
	if !errors.Is(err, ErrNoFormat) {
		t.Fatalf("error %v, want ErrNoFormat", err)
	}
}
