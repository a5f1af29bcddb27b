package inspect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
)

// A capture filter (-f) is in the pcap filter syntax tcpdump uses,
// compiled here to classic BPF in Go (no libpcap: the binaries are
// static) and applied in the kernel, so that what it leaves out never
// reaches jinid. jinid compiles a subset, enough to aim a capture:
//
//	host ADDR, net ADDR/BITS, port N, each with src or dst before it
//	ip, ip6, udp, tcp
//	and (&&), or (||), not (!), parentheses
//
// Addresses are IPv4 or IPv6 literals (names are not resolved); udp, tcp
// and port look at the IPv6 next header only (no extension headers),
// and port at unfragmented IPv4 packets and first fragments, as tcpdump
// does. Anything else is an error naming the part jinid does not
// compile (the Go pure compilers of the full syntax are unmaintained or
// Ethernet-only; pcap-filter(7) has the rest).

// Link says where a frame's network header is, for a compiled filter.
type Link int

// The links jinid captures on.
const (
	// LinkEthernet: Ethernet frames (an interface captured by name).
	LinkEthernet Link = iota
	// LinkCooked: frames from the network header on, the protocol in
	// the kernel's metadata (a packet socket of SOCK_DGRAM: "any").
	LinkCooked
	// LinkSLL: Linux cooked frames as saved (a capture file of "any"):
	// a 16-byte header ending with the protocol.
	LinkSLL
)

// snapAll is what a filter's "keep" returns: the whole frame.
const snapAll = Snaplen

// CompileCaptureFilter compiles expr for frames of link.
func CompileCaptureFilter(expr string, link Link) ([]bpf.Instruction, error) {
	toks, err := capLex(expr)
	if err != nil {
		return nil, err
	}
	p := &capParser{expr: expr, toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.text != "" {
		return nil, p.errAt(t, fmt.Sprintf("unexpected %q: want and or or between primitives", t.text))
	}
	g := &capGen{link: link}
	tl, fl := g.label(), g.label()
	n.gen(g, tl, fl)
	g.place(tl)
	g.emit(bpf.RetConstant{Val: snapAll})
	g.place(fl)
	g.emit(bpf.RetConstant{Val: 0})
	return g.resolve(expr)
}

type capToken struct {
	text string
	pos  int
}

func capLex(s string) ([]capToken, error) {
	var out []capToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')':
			out = append(out, capToken{s[i : i+1], i})
			i++
		case strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			out = append(out, capToken{s[i : i+2], i})
			i += 2
		case c == '!':
			out = append(out, capToken{"!", i})
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()!&|", rune(s[j])) {
				j++
			}
			if j == i {
				return nil, &FilterError{s, i, fmt.Sprintf("unexpected %q", string(c))}
			}
			out = append(out, capToken{s[i:j], i})
			i = j
		}
	}
	return append(out, capToken{"", len(s)}), nil
}

type capParser struct {
	expr string
	toks []capToken
	i    int
}

func (p *capParser) peek() capToken { return p.toks[p.i] }
func (p *capParser) next() capToken { t := p.toks[p.i]; p.i++; return t }
func (p *capParser) errAt(t capToken, msg string) error {
	return &FilterError{p.expr, t.pos, msg}
}

func (p *capParser) or() (capNode, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.text == "or" || t.text == "||"; t = p.peek() {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = capOr{l, r}
	}
	return l, nil
}

func (p *capParser) and() (capNode, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.text == "and" || t.text == "&&"; t = p.peek() {
		p.next()
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = capAnd{l, r}
	}
	return l, nil
}

func (p *capParser) not() (capNode, error) {
	if t := p.peek(); t.text == "not" || t.text == "!" {
		p.next()
		n, err := p.not()
		if err != nil {
			return nil, err
		}
		return capNot{n}, nil
	}
	return p.primitive()
}

// capSubset names what the capture filters compile, for errors.
const capSubset = "jinid compiles host, net, port (each with src or dst), ip, ip6, udp, tcp, and, or, not and parentheses"

func (p *capParser) primitive() (capNode, error) {
	t := p.next()
	switch t.text {
	case "(":
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.text != ")" {
			return nil, p.errAt(c, "a ( without its )")
		}
		return n, nil
	case "":
		return nil, p.errAt(t, "the filter ends where a primitive should be")
	case "ip", "ip6", "udp", "tcp":
		return capProto(t.text), nil
	}
	dir := dirAny
	if t.text == "src" || t.text == "dst" {
		dir = map[string]capDir{"src": dirSrc, "dst": dirDst}[t.text]
		t = p.next()
		if t.text != "host" && t.text != "net" && t.text != "port" {
			return nil, p.errAt(t, fmt.Sprintf("want host, net or port after %s", p.toks[p.i-2].text))
		}
	}
	switch t.text {
	case "host", "net":
		v := p.next()
		if v.text == "" {
			return nil, p.errAt(v, "want an address after "+t.text)
		}
		var pfx netip.Prefix
		var err error
		if t.text == "host" {
			var a netip.Addr
			if a, err = netip.ParseAddr(v.text); err == nil {
				if a.Zone() != "" {
					err = errors.New("a zone")
				}
				pfx = netip.PrefixFrom(a, a.BitLen())
			}
		} else {
			pfx, err = netip.ParsePrefix(v.text)
			if err == nil && pfx.Masked() != pfx {
				err = errors.New("bits set past the prefix length")
			}
		}
		if err != nil {
			return nil, p.errAt(v, fmt.Sprintf("%s %q: want an IPv4 or IPv6 address%s (jinid resolves no names)", t.text, v.text,
				map[bool]string{true: "", false: " with its prefix length, 10.0.0.0/8"}[t.text == "host"]))
		}
		return capHost{dir: dir, prefix: pfx}, nil
	case "port":
		v := p.next()
		n, err := strconv.Atoi(v.text)
		if err != nil || n < 0 || n > 65535 {
			return nil, p.errAt(v, fmt.Sprintf("port %q: want a number from 0 to 65535", v.text))
		}
		return capPort{dir: dir, port: uint32(n)}, nil
	}
	return nil, p.errAt(t, fmt.Sprintf("%q is not in jinid's capture filter syntax: %s", t.text, capSubset))
}

type capDir int

const (
	dirAny capDir = iota
	dirSrc
	dirDst
)

// Code generation: each node jumps to the true label or the false one.
// Labels are placed after the code that jumps to them, so every jump is
// forward, as classic BPF wants.

type capNode interface{ gen(g *capGen, t, f int) }

type capOr struct{ l, r capNode }
type capAnd struct{ l, r capNode }
type capNot struct{ n capNode }
type capProto string
type capHost struct {
	dir    capDir
	prefix netip.Prefix
}
type capPort struct {
	dir  capDir
	port uint32
}

func (n capOr) gen(g *capGen, t, f int) {
	mid := g.label()
	n.l.gen(g, t, mid)
	g.place(mid)
	n.r.gen(g, t, f)
}

func (n capAnd) gen(g *capGen, t, f int) {
	mid := g.label()
	n.l.gen(g, mid, f)
	g.place(mid)
	n.r.gen(g, t, f)
}

func (n capNot) gen(g *capGen, t, f int) { n.n.gen(g, f, t) }

const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86DD
)

func (n capProto) gen(g *capGen, t, f int) {
	switch n {
	case "ip":
		g.etherType()
		g.jeq(etherIPv4, t, f)
	case "ip6":
		g.etherType()
		g.jeq(etherIPv6, t, f)
	default:
		proto := uint32(17)
		if n == "tcp" {
			proto = 6
		}
		v6 := g.label()
		g.etherType()
		g.jeq(etherIPv4, g.next(), v6)
		g.emit(bpf.LoadAbsolute{Off: g.l3() + 9, Size: 1})
		g.jeq(proto, t, f)
		g.place(v6)
		g.jeq(etherIPv6, g.next(), f)
		g.emit(bpf.LoadAbsolute{Off: g.l3() + 6, Size: 1})
		g.jeq(proto, t, f)
	}
}

func (n capHost) gen(g *capGen, t, f int) {
	a := n.prefix.Addr()
	// IPv4: source at 12, destination at 16; IPv6: at 8 and 24.
	ether, src, dst := uint32(etherIPv4), uint32(12), uint32(16)
	if a.Is6() {
		ether, src, dst = etherIPv6, 8, 24
	}
	g.etherType()
	g.jeq(ether, g.next(), f)
	var offs []uint32
	if n.dir != dirDst {
		offs = append(offs, src)
	}
	if n.dir != dirSrc {
		offs = append(offs, dst)
	}
	for i, off := range offs {
		miss := f
		if i < len(offs)-1 {
			miss = g.label()
		}
		g.matchPrefix(g.l3()+off, n.prefix, t, miss)
		if miss != f {
			g.place(miss)
		}
	}
}

// matchPrefix compares the address at off with a prefix, a word at a
// time: the words the prefix covers (one for /0), the last masked.
func (g *capGen) matchPrefix(off uint32, p netip.Prefix, t, f int) {
	b := p.Addr().AsSlice()
	words := max(1, (p.Bits()+31)/32)
	for w := range words {
		word := binary.BigEndian.Uint32(b[4*w:])
		g.emit(bpf.LoadAbsolute{Off: off + uint32(4*w), Size: 4})
		if rest := p.Bits() - 32*w; rest < 32 {
			mask := ^uint32(0) << (32 - rest) // 0 for /0
			g.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: mask})
			word &= mask
		}
		if w == words-1 {
			g.jeq(word, t, f)
		} else {
			g.jeq(word, g.next(), f)
		}
	}
}

func (n capPort) gen(g *capGen, t, f int) {
	v6 := g.label()
	g.etherType()
	g.jeq(etherIPv4, g.next(), v6)
	// IPv4: TCP or UDP, not a later fragment; the ports after the
	// header, whose length the first byte gives.
	g.emit(bpf.LoadAbsolute{Off: g.l3() + 9, Size: 1})
	ok4 := g.label()
	g.jeq(6, ok4, g.next())
	g.jeq(17, ok4, f)
	g.place(ok4)
	g.emit(bpf.LoadAbsolute{Off: g.l3() + 6, Size: 2})
	g.jset(0x1FFF, f, g.next())
	g.emit(bpf.LoadMemShift{Off: g.l3()})
	g.ports(bpf.LoadIndirect{Off: g.l3(), Size: 2}, bpf.LoadIndirect{Off: g.l3() + 2, Size: 2}, n, t, f)
	g.place(v6)
	g.jeq(etherIPv6, g.next(), f)
	g.emit(bpf.LoadAbsolute{Off: g.l3() + 6, Size: 1})
	ok6 := g.label()
	g.jeq(6, ok6, g.next())
	g.jeq(17, ok6, f)
	g.place(ok6)
	g.ports(bpf.LoadAbsolute{Off: g.l3() + 40, Size: 2}, bpf.LoadAbsolute{Off: g.l3() + 42, Size: 2}, n, t, f)
}

func (g *capGen) ports(src, dst bpf.Instruction, n capPort, t, f int) {
	switch n.dir {
	case dirSrc:
		g.emit(src)
		g.jeq(n.port, t, f)
	case dirDst:
		g.emit(dst)
		g.jeq(n.port, t, f)
	default:
		g.emit(src)
		g.jeq(n.port, t, g.next())
		g.emit(dst)
		g.jeq(n.port, t, f)
	}
}

// capGen collects instructions whose jumps name labels, resolved at the
// end.
type capGen struct {
	link   Link
	ins    []capIns
	labels []int // instruction index of each label; -1 until placed
}

// capIns is an instruction, with the labels of its jumps.
type capIns struct {
	i           bpf.Instruction
	t, f        int // labels, of a conditional jump
	cond        bpf.JumpTest
	val         uint32
	conditional bool
}

func (g *capGen) label() int { g.labels = append(g.labels, -1); return len(g.labels) - 1 }

// next is a label for the next instruction emitted.
func (g *capGen) next() int {
	l := g.label()
	g.labels[l] = -2 - len(g.ins) // placed at the instruction after the jump being built
	return l
}

func (g *capGen) place(l int) { g.labels[l] = len(g.ins) }

func (g *capGen) emit(i bpf.Instruction) {
	g.ins = append(g.ins, capIns{i: i})
}

func (g *capGen) jeq(v uint32, t, f int) { g.cond(bpf.JumpEqual, v, t, f) }

func (g *capGen) jset(v uint32, t, f int) { g.cond(bpf.JumpBitsSet, v, t, f) }

func (g *capGen) cond(c bpf.JumpTest, v uint32, t, f int) {
	g.ins = append(g.ins, capIns{conditional: true, cond: c, val: v, t: t, f: f})
}

func (g *capGen) l3() uint32 {
	switch g.link {
	case LinkCooked:
		return 0
	case LinkSLL:
		return 16
	}
	return 14
}

func (g *capGen) etherType() {
	switch g.link {
	case LinkCooked:
		g.emit(bpf.LoadExtension{Num: bpf.ExtProto})
	case LinkSLL:
		g.emit(bpf.LoadAbsolute{Off: 14, Size: 2})
	default:
		g.emit(bpf.LoadAbsolute{Off: 12, Size: 2})
	}
}

// maxCapIns bounds a compiled filter (the kernel takes 4,096).
const maxCapIns = 4096

// resolve turns the labels into jump offsets.
func (g *capGen) resolve(expr string) ([]bpf.Instruction, error) {
	at := func(l int) int {
		p := g.labels[l]
		if p <= -2 {
			return -2 - p + 1 // "next": the instruction after the jump
		}
		return p
	}
	if len(g.ins) > maxCapIns {
		return nil, fmt.Errorf("the capture filter %q compiles to %d instructions, more than the kernel's %d", expr, len(g.ins), maxCapIns)
	}
	out := make([]bpf.Instruction, len(g.ins))
	for i, in := range g.ins {
		switch {
		case in.conditional:
			st, sf := at(in.t)-i-1, at(in.f)-i-1
			if st < 0 || sf < 0 || st > 255 || sf > 255 {
				return nil, fmt.Errorf("the capture filter %q is too large for one BPF program's jumps (255 instructions at most): split it", expr)
			}
			out[i] = bpf.JumpIf{Cond: in.cond, Val: in.val, SkipTrue: uint8(st), SkipFalse: uint8(sf)}
		default:
			out[i] = in.i
		}
	}
	return out, nil
}
