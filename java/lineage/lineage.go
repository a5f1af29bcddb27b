// Package lineage says what the Java side of Jini looks like, per
// lineage of the Java implementation: a catalogue of its classes (names,
// serialVersionUIDs, fields) and the table of the registrar's remote
// methods and their Jini ERI hashes, made by tools/javacat from the Java
// classes. JGDMS (org.apache.river.reggie.proxy) is the lineage jinid
// serves; Apache River 3 (org.apache.river.reggie) would be another pair
// of files with the same class roles. The lookup service's Java face
// (java/javalookup) and the packet inspector read it.
package lineage

import (
	"crypto/sha1"
	_ "embed"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/jinid/jinid/java/javaio"
)

//go:embed jgdms.classes
var jgdmsClasses string

//go:embed jgdms.methods
var jgdmsMethods string

// Lineage is one lineage of the Java implementation: its classes and
// remote methods.
type Lineage struct {
	// Name names it in logs and docs.
	Name string
	// Package is the package of the registrar's own classes; Class
	// resolves short names in it.
	Package string
	Classes *javaio.Catalogue
	// Methods are the registrar's remote methods.
	*Methods
	// listener holds the event listener's notify hash.
	listener int64
}

// Methods are the remote methods of one Java remote interface, by the
// hash Jini ERI names them with and by key, "name/number of arguments".
type Methods struct {
	methods map[int64]string
	hashes  map[string]int64
}

// Listener is the hash of a Java event listener's notify.
func (l *Lineage) Listener() int64 { return l.listener }

// JGDMS returns the lineage of JGDMS, the one jinid serves.
func JGDMS() (*Lineage, error) {
	return newLineage("jgdms", "org.apache.river.reggie.proxy", jgdmsClasses, jgdmsMethods)
}

func newLineage(name, pkg, classes, methods string) (*Lineage, error) {
	cat, err := javaio.ParseCatalogue(classes, javaio.JDK())
	if err != nil {
		return nil, fmt.Errorf("lineage %s: %w", name, err)
	}
	m, listener, err := parseMethods(methods)
	if err != nil {
		return nil, fmt.Errorf("lineage %s: %w", name, err)
	}
	return &Lineage{Name: name, Package: pkg, Classes: cat, Methods: m, listener: listener}, nil
}

// ParseMethods reads a table of remote methods as tools/javacat
// --methods prints it: a "method NAME DESCRIPTOR" line each.
func ParseMethods(text string) (*Methods, error) {
	m, _, err := parseMethods(text)
	return m, err
}

// parseMethods reads a methods table, whose "listener notify
// DESCRIPTOR" line, if any, gives the event listener's hash.
func parseMethods(text string) (m *Methods, listener int64, err error) {
	m = &Methods{methods: make(map[int64]string), hashes: make(map[string]int64)}
	for i, line := range strings.Split(text, "\n") {
		words := strings.Fields(line)
		if len(words) == 0 || strings.HasPrefix(words[0], "#") {
			continue
		}
		if len(words) != 3 || (words[0] != "method" && words[0] != "listener") {
			return nil, 0, fmt.Errorf("methods line %d: %q", i+1, line)
		}
		h := MethodHash(words[1], words[2])
		if words[0] == "listener" {
			listener = h
			continue
		}
		key := words[1] + "/" + fmt.Sprint(argCount(words[2]))
		m.methods[h] = key
		m.hashes[key] = h
	}
	return m, listener, nil
}

// MethodHash is the hash Jini ERI identifies a method by: the first 8
// bytes of SHA-1 over the UTF form of name and descriptor, read as a
// little-endian long.
func MethodHash(name, descriptor string) int64 {
	s := name + descriptor
	b := make([]byte, 0, 2+len(s))
	b = binary.BigEndian.AppendUint16(b, uint16(javaio.ModifiedUTF8Len(s)))
	b = javaio.AppendModifiedUTF8(b, s)
	sum := sha1.Sum(b)
	return int64(binary.LittleEndian.Uint64(sum[:8]))
}

// argCount counts the arguments of a JVM method descriptor.
func argCount(desc string) int {
	n := 0
	for i := 1; i < len(desc) && desc[i] != ')'; i++ {
		for desc[i] == '[' {
			i++
		}
		if desc[i] == 'L' {
			i += strings.IndexByte(desc[i:], ';')
		}
		n++
	}
	return n
}

// Method returns the key ("name/arguments") of a method hash.
func (m *Methods) Method(hash int64) (string, bool) {
	k, ok := m.methods[hash]
	return k, ok
}

// Hashes returns the hashes of every method.
func (m *Methods) Hashes() []int64 {
	out := make([]int64, 0, len(m.methods))
	for h := range m.methods {
		out = append(out, h)
	}
	return out
}

// Hash returns the hash of a method by key.
func (m *Methods) Hash(key string) int64 { return m.hashes[key] }

// Class returns a class of the lineage: a short name is in Package.
func (l *Lineage) Class(name string) *javaio.Class {
	if !strings.Contains(name, ".") {
		name = l.Package + "." + name
	}
	return l.Classes.Class(name)
}

// New returns a new object of a class of the lineage.
func (l *Lineage) New(name string) *javaio.Object { return javaio.NewObject(l.Class(name)) }
