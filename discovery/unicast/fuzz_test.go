package unicast

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/vectors"
	"github.com/jinid/jinid/java/javaio"
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

// Whatever a lookup service hands out as its proxy, reading it ends,
// keeps the bytes whole, and says the same twice.
func FuzzReadRegistrar(f *testing.F) {
	for _, name := range []string{"reggie-unicast-v1.bin", "reggie-unicast-v2.bin"} {
		f.Add(captured(f, name).Registrar.Marshalled)
	}
	for _, name := range []string{"v1.unicast.response", "v2.unicast.response"} {
		f.Add(vectorProxy(f, name))
	}
	f.Add(proxyOf(f, javaio.MarshalledObject, "com.sun.jini.reggie.RegistrarProxy", "x.Sub", javaio.Block{1, 2, 3}, javaio.Block(make([]byte, 13)), "s"))
	f.Fuzz(func(t *testing.T, m []byte) {
		r := ReadRegistrar(m)
		if !bytes.Equal(r.Marshalled, m) {
			t.Fatal("the proxy's bytes changed")
		}
		if again := ReadRegistrar(m); again.ServiceID != r.ServiceID || (again.Descriptor == nil) != (r.Descriptor == nil) {
			t.Fatal("read differently twice")
		}
		if StandInID(m) != StandInID(bytes.Clone(m)) {
			t.Fatal("stand-in differs for equal bytes")
		}
	})
}
