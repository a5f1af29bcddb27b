package javaio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jinid/jinid/internal/rig/vectors"
)

func FuzzReadMarshalled(f *testing.F) {
	for _, v := range vectors.Kind("unicast-response") {
		b := v.Bytes()
		if i := bytes.Index(b, []byte{0xAC, 0xED}); i >= 0 {
			f.Add(b[i:])
		}
	}
	f.Add(AppendMarshalledString(nil, MarshalledInstance, `{"serviceID":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b), 64<<10)
		got, err := ReadMarshalled(r)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !bytes.Equal(got, b[:len(got)]) {
			t.Fatal("captured bytes differ from the input")
		}
		UnmarshalString(got)
	})
}

func FuzzDecodeModifiedUTF8(f *testing.F) {
	f.Add([]byte("lab"))
	f.Add([]byte{0xC0, 0x80, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeModifiedUTF8(b)
		if err != nil {
			return
		}
		back, err := DecodeModifiedUTF8(AppendModifiedUTF8(nil, s))
		if err != nil || back != s {
			t.Fatalf("%q did not survive encoding: %q %v", s, back, err)
		}
	})
}

// FuzzDecode: any stream either fails with ErrMalformed or decodes to a
// graph that writes back and decodes again to the same graph.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/jeri/*.bin")
	for _, name := range files {
		b, _ := os.ReadFile(name)
		if i := bytes.Index(b, []byte{0xAC, 0xED, 0, 5}); i >= 0 {
			f.Add(b[i:])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := readAll(t, b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		first := dumpAll(vs)
		again, err := readAll(t, writeAll(t, vs, true))
		if err != nil {
			t.Fatalf("decoding what was written: %v", err)
		}
		if second := dumpAll(again); second != first {
			t.Fatalf("graph changed:\n%s\n----\n%s", first, second)
		}
	})
}
