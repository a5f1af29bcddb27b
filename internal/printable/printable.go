// Package printable shows text from elsewhere (a packet, a lookup
// service's answer, an item another client registered) on a terminal
// without letting it drive the terminal: control characters are shown
// escaped, as ls and tshark do, never sent. A title set by ESC ] 0 ; …
// BEL, a colour, a carriage return that overwrites a line or a newline
// that forges one become visible text.
package printable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String is s with every control character escaped: \t, \n, \r and \e
// (ESC) by name, the other C0 controls, DEL and bytes that are not
// UTF-8 as \xNN, the C1 controls and the bidirectional overrides (which
// reorder what follows on the screen) as \uNNNN. Printable text,
// backslashes included, is unchanged.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean says s has nothing to escape (the common case: no copy).
func clean(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s) && !strings.ContainsFunc(s, hidden)
}

// hidden says r acts on the terminal rather than shows: a C1 control,
// or a bidirectional embedding, override or isolate.
func hidden(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
