package inspect

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// A display filter (-Y) selects the records printed, by their decoded
// fields, in a small language shaped like Wireshark's:
//
//	kind == "multicast-announcement" && group == "lab" && version == 2
//	!(kind == unicast-request) || error
//	method contains "lookup"
//
// A comparison is field op value, op one of ==, !=, contains (and its
// Wireshark spelling ~ is not taken: contains is clearer). A field alone
// is true when the record has it. A field of several values (group, a
// request's serviceID) matches == when any value does and != when none
// does. Values are quoted strings or bare words; versions, ports and
// frames compare as numbers. && (and), || (or), ! (not) and parentheses
// combine them.

// Filter is a compiled display filter.
type Filter struct{ root node }

// Match reports whether the filter selects r.
func (f *Filter) Match(r Record) bool { return f == nil || f.root.eval(r) }

// FilterError says where a filter went wrong.
type FilterError struct {
	Expr string
	Pos  int // byte offset of the bad token
	Msg  string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("%s at column %d:\n  %s\n  %s^", e.Msg, e.Pos+1, e.Expr, strings.Repeat(" ", e.Pos))
}

// ParseFilter compiles a display filter.
func ParseFilter(expr string) (*Filter, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{expr: expr, toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEnd {
		return nil, p.errAt(t, fmt.Sprintf("unexpected %q: want && or || between comparisons", t.text))
	}
	return &Filter{root: n}, nil
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokWord
	tokString
	tokOp // == != && || ! ( )
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			j := i + 1
			var b strings.Builder
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, &FilterError{s, i, "a string that does not end (a \" is missing)"}
			}
			out = append(out, token{tokString, b.String(), i})
			i = j + 1
		case strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") || strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			out = append(out, token{tokOp, s[i : i+2], i})
			i += 2
		case c == '!' || c == '(' || c == ')':
			out = append(out, token{tokOp, s[i : i+1], i})
			i++
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, token{tokWord, s[i:j], i})
			i = j
		default:
			return nil, &FilterError{s, i, fmt.Sprintf("unexpected %q", string(c))}
		}
	}
	return append(out, token{tokEnd, "", len(s)}), nil
}

// isWordByte: letters, digits and what host:port, ServiceIDs, method
// names and kinds have in them.
func isWordByte(c byte) bool {
	return c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))) || strings.IndexByte(".:-_/[]%", c) >= 0 || c >= 0x80
}

type parser struct {
	expr string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) errAt(t token, msg string) error { return &FilterError{p.expr, t.pos, msg} }

func (p *parser) is(words ...string) bool {
	t := p.peek()
	for _, w := range words {
		if (t.kind == tokOp || t.kind == tokWord) && t.text == w {
			return true
		}
	}
	return false
}

func (p *parser) or() (node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.is("||", "or") {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
	return l, nil
}

func (p *parser) and() (node, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.is("&&", "and") {
		p.next()
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
	return l, nil
}

func (p *parser) not() (node, error) {
	if p.is("!", "not") {
		p.next()
		n, err := p.not()
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch {
	case t.kind == tokOp && t.text == "(":
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tokOp || c.text != ")" {
			return nil, p.errAt(c, "a ( without its )")
		}
		return n, nil
	case t.kind == tokWord:
		if !IsField(t.text) {
			return nil, p.errAt(t, fmt.Sprintf("unknown field %q (fields: %s)", t.text, strings.Join(FieldNames, ", ")))
		}
		if !p.is("==", "!=", "contains") {
			return hasNode{t.text}, nil
		}
		op := p.next().text
		v := p.next()
		if v.kind != tokWord && v.kind != tokString {
			return nil, p.errAt(v, fmt.Sprintf("want a value after %s", op))
		}
		return cmpNode{field: t.text, op: op, value: v.text}, nil
	case t.kind == tokEnd:
		return nil, p.errAt(t, "the filter ends where a comparison should be")
	}
	return nil, p.errAt(t, fmt.Sprintf("unexpected %q: want a field, ! or (", t.text))
}

type node interface{ eval(Record) bool }

type orNode struct{ l, r node }
type andNode struct{ l, r node }
type notNode struct{ n node }
type hasNode struct{ field string }
type cmpNode struct{ field, op, value string }

func (n orNode) eval(r Record) bool  { return n.l.eval(r) || n.r.eval(r) }
func (n andNode) eval(r Record) bool { return n.l.eval(r) && n.r.eval(r) }
func (n notNode) eval(r Record) bool { return !n.n.eval(r) }
func (n hasNode) eval(r Record) bool { return len(Values(r, n.field)) > 0 }

func (n cmpNode) eval(r Record) bool {
	vals := Values(r, n.field)
	any := false
	for _, v := range vals {
		var hit bool
		if n.op == "contains" {
			hit = strings.Contains(v, n.value)
		} else {
			hit = equal(v, n.value)
		}
		if hit {
			any = true
			break
		}
	}
	if n.op == "!=" {
		return !any
	}
	return any
}

// equal compares as numbers when both are, as text otherwise.
func equal(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		return x == y
	}
	return a == b
}
