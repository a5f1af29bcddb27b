package printable

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"lobby printer", "lobby printer"},
		{"Café ünïcode", "Café ünïcode"},
		{`C:\path`, `C:\path`},
		{"\x1b]0;owned\x07title", `\e]0;owned\x07title`},
		{"\x1b[31mred\x1b[0m", `\e[31mred\e[0m`},
		{"line\r\nforged 10.0.0.1:4160", `line\r\nforged 10.0.0.1:4160`},
		{"a\tb", `a\tb`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b2J", `c1\u009b2J`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"\x00nul", `\x00nul`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;x\x07", "\xff", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		for i := 0; i < len(out); i++ {
			if c := out[i]; c < 0x20 || c == 0x7f {
				t.Fatalf("String(%q) = %q keeps a control byte", s, out)
			}
		}
		for _, r := range out {
			if hidden(r) {
				t.Fatalf("String(%q) = %q keeps %U", s, out, r)
			}
		}
	})
}
