package javalookup

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
)

// Java callers have the scopes HTTP callers have: every method that
// changes the registry (registrations, event registrations, attributes,
// leases: what HTTP asks a client token for) needs the right to
// register, every look-up the right to read; a refusal is a Java
// AccessException, before the call's arguments are read.
func TestJavaScopes(t *testing.T) {
	refuse := func(jeri.Conn) error { return errors.New("jinid: Java clients at 198.18.1.9 may not do that here") }
	conn := jeri.Conn{Remote: &net.TCPAddr{IP: net.IPv4(198, 18, 1, 9), Port: 40000}, Local: &net.TCPAddr{IP: net.IPv4(198, 18, 1, 1), Port: 4170}}
	for _, c := range []struct {
		name              string
		register, read    func(jeri.Conn) error
		refusedIfChanging bool
	}{
		{"a network that may only look", refuse, nil, true},
		{"a network that may not look", nil, refuse, false},
	} {
		s, err := New(Config{MayRegister: c.register, MayRead: c.read})
		if err != nil {
			t.Fatal(err)
		}
		if c.register == nil {
			s.cfg.MayRegister = func(jeri.Conn) error { return nil }
		}
		n := 0
		for _, h := range s.l.Hashes() {
			key, _ := s.l.Method(h)
			if key == "getMemberGroups/0" || key == "getLocator/0" || changes(key) != c.refusedIfChanging {
				continue // not checked here: served (and would need a registrar)
			}
			empty, _ := javaio.NewDecoder([]byte{0xac, 0xed, 0, 5})
			reply := s.invoke(key, true, &jeri.Call{Method: s.l.Hash(key), Args: empty, Conn: conn})
			if len(reply) == 0 || reply[0] == 1 || !strings.Contains(string(reply), "java.rmi.AccessException") {
				t.Errorf("%s: %s was not refused", c.name, key)
			}
			n++
		}
		if n < 8 {
			t.Errorf("%s: only %d methods checked", c.name, n)
		}
	}
	for _, key := range []string{"notify/5", "notiFy/5", "register/2", "renewLeases/3", "cancelEventLease/2", "setAttributes/3"} {
		if !changes(key) {
			t.Errorf("%s is not counted as a change", key)
		}
	}
}
