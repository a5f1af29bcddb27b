package unicast

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/vectors"
)

func FuzzReadRequest(f *testing.F) {
	for _, v := range vectors.Kind("unicast-request") {
		f.Add(v.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ReadRequest(bytes.NewReader(b))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		enc, err := q.Append(nil)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", q, err)
		}
		if !bytes.HasPrefix(b, enc) {
			t.Fatalf("round trip: %x became %x", b, enc)
		}
	})
}

func FuzzReadResponse(f *testing.F) {
	for _, v := range vectors.Kind("unicast-response") {
		f.Add(v.Bytes())
	}
	jinid := &Response{Version: 1, Groups: []string{"a"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: discovery.ServiceID{1}}}}
	b, _ := jinid.Append(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		// A small limit keeps each run cheap and exercises the limit.
		p, err := ReadResponse(bytes.NewReader(b), 64<<10)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			if errors.Is(err, ErrNoFormat) || errors.As(err, new(*discovery.FormatError)) {
				return
			}
			return
		}
		if strings.ContainsRune(strings.Join(p.Groups, "")+p.Host, '\uFFFD') {
			return // lone surrogates cannot survive a Go string
		}
		enc, err := p.Append(nil)
		if err != nil {
			t.Fatalf("decoded a response but cannot encode it: %v", err)
		}
		back, err := ReadResponse(bytes.NewReader(enc), 1<<20)
		if err != nil {
			t.Fatalf("re-reading what was written: %v", err)
		}
		if back.Host != p.Host || back.Port != p.Port || !slices.Equal(back.Groups, p.Groups) ||
			!bytes.Equal(back.Registrar.Marshalled, p.Registrar.Marshalled) {
			t.Fatalf("round trip changed the response")
		}
	})
}
