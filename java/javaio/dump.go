package javaio

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// Dump writes v as indented text: classes with their serialVersionUIDs,
// fields by name, custom data, and "@N" for a value seen before. It is
// what `jinid inspect` prints for Java values, and what tests compare
// graphs by, since two streams of one graph differ in their handles.
func Dump(v Value) string {
	var b strings.Builder
	d := dumper{b: &b, seen: make(map[any]int)}
	d.value(v, 0)
	return b.String()
}

type dumper struct {
	b    *strings.Builder
	seen map[any]int
}

func (d *dumper) line(depth int, format string, args ...any) {
	d.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(d.b, format, args...)
	d.b.WriteByte('\n')
}

func (d *dumper) value(v Value, depth int) {
	switch v := v.(type) {
	case nil:
		d.line(depth, "null")
	case string:
		d.line(depth, "%q", v)
	case Block:
		d.line(depth, "block %s", hex.EncodeToString(v))
	case *Object, *Array, *Enum, *ClassObject:
		if n, ok := d.seen[v]; ok {
			d.line(depth, "@%d", n)
			return
		}
		n := len(d.seen)
		d.seen[v] = n
		switch v := v.(type) {
		case *Object:
			d.line(depth, "object#%d %s", n, classLine(v.Class))
			for i, k := range v.Class.chain() {
				if i >= len(v.Data) {
					break
				}
				for j, f := range k.Fields {
					if j < len(v.Data[i].Fields) {
						d.field(f.Name, v.Data[i].Fields[j], depth+1)
					}
				}
				if k.Flags&(scWriteMethod|scExternalizable) != 0 {
					d.line(depth+1, "custom(%s):", k)
					for _, c := range v.Data[i].Custom {
						d.value(c, depth+2)
					}
				}
			}
		case *Array:
			d.line(depth, "array#%d %s len %d", n, v.Class.Name, v.Len())
			if v.Prim != nil {
				d.line(depth+1, "%s", hex.EncodeToString(v.Prim))
			}
			for _, e := range v.Elems {
				d.value(e, depth+1)
			}
		case *Enum:
			d.line(depth, "enum#%d %s.%s", n, v.Class.Name, v.Name)
		case *ClassObject:
			d.line(depth, "class#%d %s", n, v.Class)
		}
	default:
		d.line(depth, "%T %v", v, v)
	}
}

func (d *dumper) field(name string, v Value, depth int) {
	switch v.(type) {
	case nil, string, bool, int8, uint16, int16, int32, int64, float32, float64:
		var b strings.Builder
		(&dumper{b: &b}).value(v, 0)
		d.line(depth, "%s = %s", name, strings.TrimSpace(b.String()))
	default:
		d.line(depth, "%s =", name)
		d.value(v, depth+1)
	}
}

func classLine(c *Class) string {
	var parts []string
	for k := c; k != nil; k = k.Super {
		if k.Proxy {
			parts = append(parts, "proxy("+strings.Join(k.Interfaces, ", ")+")")
			continue
		}
		var fields []string
		for _, f := range k.Fields {
			if f.Type != "" {
				fields = append(fields, f.Name+" "+f.Type)
			} else {
				fields = append(fields, f.Name+" "+string(f.Code))
			}
		}
		parts = append(parts, fmt.Sprintf("%s(%d, 0x%02x: %s)", k.Name, k.SUID, k.Flags, strings.Join(fields, ", ")))
	}
	return strings.Join(parts, " < ")
}
