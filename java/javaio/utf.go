// Package javaio reads and writes the Java wire formats that Jini
// borrows: DataInput/DataOutput's "modified UTF-8" strings, and Java
// serialization (java.io.ObjectOutputStream) streams, whole object graphs
// both ways: Decode reads one into Values (classes, fields, arrays,
// strings, enums, handles, block data, bounded in depth and size), Encode
// writes Values back byte for byte as Java does, and a Catalogue names
// the classes jinid knows. Registrar proxies are read at discovery time
// (their ServiceID included), the lookup service's own proxy is written,
// and Jini ERI calls carry their arguments in these streams.
package javaio

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformed is wrapped by every error about bytes that do not follow the
// Java formats.
var ErrMalformed = errors.New("malformed java data")

// MaxUTFLen is the longest string DataOutput.writeUTF can write, in bytes of
// its encoding.
const MaxUTFLen = 0xFFFF

// ModifiedUTF8Len returns the length of s in Java's modified UTF-8: NUL
// takes two bytes and characters outside the BMP take six (a surrogate pair,
// three bytes each).
func ModifiedUTF8Len(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == 0:
			n += 2
		case r < 0x80:
			n++
		case r < 0x800:
			n += 2
		case r < 0x10000:
			n += 3
		default:
			n += 6
		}
	}
	return n
}

// AppendModifiedUTF8 appends s in modified UTF-8 (without a length prefix).
// Invalid UTF-8 in s is written as U+FFFD, as Java would write the
// replacement character the decoder produced.
func AppendModifiedUTF8(dst []byte, s string) []byte {
	for _, r := range s {
		switch {
		case r == 0:
			dst = append(dst, 0xC0, 0x80)
		case r < 0x80:
			dst = append(dst, byte(r))
		case r < 0x800:
			dst = append(dst, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
		case r < 0x10000:
			dst = append3(dst, r)
		default:
			hi, lo := utf16.EncodeRune(r)
			dst = append3(append3(dst, hi), lo)
		}
	}
	return dst
}

func append3(dst []byte, r rune) []byte {
	return append(dst, 0xE0|byte(r>>12), 0x80|byte((r>>6)&0x3F), 0x80|byte(r&0x3F))
}

// AppendUTF appends s as DataOutput.writeUTF does: an unsigned 16-bit length
// followed by the modified UTF-8 bytes. It fails, as Java does, when the
// encoding is longer than 65535 bytes.
func AppendUTF(dst []byte, s string) ([]byte, error) {
	n := ModifiedUTF8Len(s)
	if n > MaxUTFLen {
		return dst, fmt.Errorf("string of %d encoded bytes exceeds the %d-byte limit of writeUTF", n, MaxUTFLen)
	}
	dst = append(dst, byte(n>>8), byte(n))
	return AppendModifiedUTF8(dst, s), nil
}

// DecodeModifiedUTF8 decodes b as DataInput.readUTF does and returns it as
// a Go string. Java accepts overlong two- and three-byte forms (C0 80 is
// NUL) and unpaired surrogates; an unpaired surrogate becomes U+FFFD here
// because a Go string cannot hold it.
func DecodeModifiedUTF8(b []byte) (string, error) {
	ascii := true
	for _, c := range b {
		if c >= 0x80 || c == 0 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), nil
	}
	out := make([]byte, 0, len(b))
	var pending rune = -1 // a high surrogate waiting for its low half
	flush := func() {
		if pending >= 0 {
			out = utf8.AppendRune(out, utf8.RuneError)
			pending = -1
		}
	}
	for i := 0; i < len(b); {
		c := b[i]
		var r rune
		switch c >> 4 {
		case 0, 1, 2, 3, 4, 5, 6, 7:
			r = rune(c)
			i++
		case 12, 13:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return "", fmt.Errorf("%w: bad two-byte modified UTF-8 sequence at byte %d", ErrMalformed, i)
			}
			r = rune(c&0x1F)<<6 | rune(b[i+1]&0x3F)
			i += 2
		case 14:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return "", fmt.Errorf("%w: bad three-byte modified UTF-8 sequence at byte %d", ErrMalformed, i)
			}
			r = rune(c&0x0F)<<12 | rune(b[i+1]&0x3F)<<6 | rune(b[i+2]&0x3F)
			i += 3
		default:
			return "", fmt.Errorf("%w: byte 0x%02x at %d cannot start a modified UTF-8 character", ErrMalformed, c, i)
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00: // high half
			flush()
			pending = r
		case utf16.IsSurrogate(r): // low half
			if pending >= 0 {
				out = utf8.AppendRune(out, utf16.DecodeRune(pending, r))
				pending = -1
			} else {
				out = utf8.AppendRune(out, utf8.RuneError)
			}
		default:
			flush()
			out = utf8.AppendRune(out, r)
		}
	}
	flush()
	return string(out), nil
}
