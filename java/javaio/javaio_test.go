package javaio

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestModifiedUTF8(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		enc  string // hex
	}{
		{"ascii", "lab", "6c6162"},
		{"nul is two bytes", "a\x00b", "61c08062"},
		{"latin", "ü", "c3bc"},
		{"bmp", "€", "e282ac"},
		{"supplementary as surrogate pair", "😀", "eda0bdedb880"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := AppendModifiedUTF8(nil, tc.s)
			if hex.EncodeToString(enc) != tc.enc {
				t.Fatalf("encoded %x, want %s", enc, tc.enc)
			}
			if ModifiedUTF8Len(tc.s) != len(enc) {
				t.Fatalf("ModifiedUTF8Len = %d, encoded %d", ModifiedUTF8Len(tc.s), len(enc))
			}
			dec, err := DecodeModifiedUTF8(enc)
			if err != nil || dec != tc.s {
				t.Fatalf("decoded %q, %v", dec, err)
			}
		})
	}
	// Java reads these; Go strings cannot hold lone surrogates.
	if s, err := DecodeModifiedUTF8([]byte{0xED, 0xA0, 0xBD, 'x'}); err != nil || s != "\uFFFDx" {
		t.Fatalf("lone high surrogate: %q %v", s, err)
	}
	for _, bad := range [][]byte{{0xC3}, {0xE2, 0x82}, {0xF0, 0x9F, 0x98, 0x80}, {0x80}, {0xC3, 0x41}} {
		if _, err := DecodeModifiedUTF8(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: error %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := AppendUTF(nil, strings.Repeat("é", 40000)); err == nil || !strings.Contains(err.Error(), "80000 encoded bytes exceeds") {
		t.Fatalf("overlong writeUTF: %v", err)
	}
}

func TestBlockData(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 250) // 2500 bytes: 1024, 1024, 452
	enc := AppendBlockData(nil, data)
	if len(enc) != len(data)+3*5 {
		t.Fatalf("encoded %d bytes, want three TC_BLOCKDATALONG records", len(enc))
	}
	small := AppendBlockData(nil, []byte{1, 2, 3})
	if !bytes.Equal(small, []byte{tcBlockData, 3, 1, 2, 3}) {
		t.Fatalf("short block: %x", small)
	}
	got, err := io.ReadAll(NewBlockData(NewReader(bytes.NewReader(enc), 1<<20)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
}

// stream builds object streams by hand for the skimmer tests.
type stream struct{ b []byte }

func (s *stream) raw(b ...byte) *stream { s.b = append(s.b, b...); return s }
func (s *stream) utf(str string) *stream {
	s.b, _ = AppendUTF(s.b, str)
	return s
}

func newStream() *stream { return (&stream{}).raw(0xAC, 0xED, 0, 5) }

func TestReadMarshalled(t *testing.T) {
	// A serializable class with a primitive and an object field, a
	// writeObject annotation holding block data, a superclass, then an
	// object array referring back to earlier objects, a proxy class, an
	// enum and a long string.
	s := newStream().
		raw(tcObject, tcClassDesc).utf("Sub").raw(0, 0, 0, 0, 0, 0, 0, 1, scSerializable|scWriteMethod, 0, 2).
		raw('J').utf("n").
		raw('[').utf("items").raw(tcString).utf("[Ljava/lang/Object;").
		raw(tcEndBlockData).
		raw(tcClassDesc).utf("Base").raw(0, 0, 0, 0, 0, 0, 0, 2, scSerializable, 0, 1).
		raw('Z').utf("b").raw(tcEndBlockData, tcNull).
		// values: Base.b, then Sub.n, Sub.items, Sub annotation
		raw(1).
		raw(0, 0, 0, 0, 0, 0, 0, 42).
		raw(tcArray, tcClassDesc).utf("[Ljava.lang.Object;").raw(0, 0, 0, 0, 0, 0, 0, 3, scSerializable, 0, 0, tcEndBlockData, tcNull).
		raw(0, 0, 0, 4).
		raw(tcReference, 0, 0x7E, 0, 1). // the string "[Ljava/lang/Object;"
		raw(tcObject, tcProxyClassDesc, 0, 0, 0, 1).utf("com.example.Iface").raw(tcEndBlockData).
		raw(tcClassDesc).utf("java.lang.reflect.Proxy").raw(0, 0, 0, 0, 0, 0, 0, 4, scSerializable, 0, 0, tcEndBlockData, tcNull).
		raw(tcEnum, tcClassDesc).utf("Color").raw(0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0, 0, tcEndBlockData, tcNull).raw(tcString).utf("RED").
		raw(tcLongString, 0, 0, 0, 0, 0, 0, 0, 3).raw('a', 'b', 'c').
		raw(tcBlockData, 2, 9, 9, tcEndBlockData)
	tail := []byte{tcBlockData, 1, 7}
	in := append(append([]byte{}, s.b...), tail...)
	r := NewReader(bytes.NewReader(in), 1<<20)
	got, err := ReadMarshalled(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, s.b) {
		t.Fatalf("captured %d bytes, want the %d of the object", len(got), len(s.b))
	}
	rest, _ := io.ReadAll(r)
	if !bytes.Equal(rest, tail) {
		t.Fatalf("left %x after the object, want %x", rest, tail)
	}
}

func TestReadMarshalledOwnWriter(t *testing.T) {
	for _, c := range []Container{MarshalledObject, MarshalledInstance} {
		for _, text := range []string{`{"serviceID":"x"}`, strings.Repeat("λ", 40000)} {
			b := AppendMarshalledString(nil, c, text)
			got, err := ReadMarshalled(NewReader(bytes.NewReader(b), 1<<20))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("container %d: skimmed %d of %d bytes: %v", c, len(got), len(b), err)
			}
			s, gotC, ok := UnmarshalString(b)
			if !ok || s != text || gotC != c {
				t.Fatalf("container %d: UnmarshalString = %.20q, %d, %v", c, s, gotC, ok)
			}
		}
	}
}

func TestReadMarshalledHostile(t *testing.T) {
	deep := newStream()
	for range 200 {
		deep.raw(tcArray, tcClassDesc).utf("[Ljava.lang.Object;").raw(0, 0, 0, 0, 0, 0, 0, 0, scSerializable, 0, 0, tcEndBlockData, tcNull, 0, 0, 0, 1)
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int64
		want  string
	}{
		{"bad magic", []byte{0xCA, 0xFE, 0, 5}, 1 << 20, "stream magic is 0xcafe"},
		{"bad version", []byte{0xAC, 0xED, 0, 4}, 1 << 20, "stream version 4"},
		{"unknown type code", newStream().raw(0x42).b, 1 << 20, "unknown type code 0x42"},
		{"dangling reference", newStream().raw(tcReference, 0, 0x7E, 0, 9).b, 1 << 20, "reference to handle 0x7e0009, only 0 handles"},
		{"deep nesting", deep.b, 1 << 20, "nested more than 64 deep"},
		{"huge primitive array", newStream().raw(tcArray, tcClassDesc).utf("[B").raw(0, 0, 0, 0, 0, 0, 0, 0, scSerializable, 0, 0, tcEndBlockData, tcNull, 0x7F, 0xFF, 0xFF, 0xFF).b, 1 << 20, "2147483647 bytes declared"},
		{"negative array", newStream().raw(tcArray, tcClassDesc).utf("[B").raw(0, 0, 0, 0, 0, 0, 0, 0, scSerializable, 0, 0, tcEndBlockData, tcNull, 0xFF, 0xFF, 0xFF, 0xFF).b, 1 << 20, "array length -1 is negative"},
		{"block data as object", newStream().raw(tcBlockData, 0).b, 1 << 20, "block data where an object was expected"},
		{"externalizable without block data", newStream().raw(tcObject, tcClassDesc).utf("X").raw(0, 0, 0, 0, 0, 0, 0, 0, scExternalizable, 0, 0, tcEndBlockData, tcNull).b, 1 << 20, "cannot be skipped"},
		{"over limit", AppendMarshalledString(nil, MarshalledObject, strings.Repeat("x", 500)), 300, "stream exceeds size limit"},
		{"truncated", newStream().raw(tcString, 0, 10, 'a').b, 1 << 20, "stream ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMarshalled(NewReader(bytes.NewReader(tc.in), tc.limit))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
