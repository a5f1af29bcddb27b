package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/printable"
	"github.com/jinid/jinid/services/apitypes"
)

// Every command that prints data prints it one of four ways, chosen with
// -o (docs/operations.md, "Output"):
//
//   - table: for people. A list is a table with a header; one thing is
//     "field  value" lines.
//   - json: one object; a list is one object holding the list; a
//     stream (discover --watch, listen, pull) is one object per line.
//   - yaml: the JSON's fields, in the same order.
//   - parsable: one line per thing, its fields in the table's order,
//     separated by ";" (escapeField), no header: for shell scripts.
//
// Times are RFC 3339 in UTC, durations Go durations ("10m0s") or
// "forever", in every format.
const (
	formatTable    = "table"
	formatJSON     = "json"
	formatYAML     = "yaml"
	formatParsable = "parsable"
)

// outputFlags are -o and --json, its alias.
type outputFlags struct {
	format string
	json   bool
}

func (o *outputFlags) add(s *spec) {
	s.Flags().StringVarP(&o.format, "output", "o", formatTable, "output format: table, json, yaml or parsable")
	s.Flags().BoolVar(&o.json, "json", false, "the same as -o json")
}

// chosen is the format the flags name, or a usage error.
func (o *outputFlags) chosen() (string, error) {
	f := strings.ToLower(o.format)
	if o.json {
		if f != formatTable && f != formatJSON {
			return "", usagef("--json and -o %s are two output formats: give one", o.format)
		}
		f = formatJSON
	}
	switch f {
	case formatTable, formatJSON, formatYAML, formatParsable:
		return f, nil
	}
	return "", usagef("-o %q: want table, json, yaml or parsable", o.format)
}

// A field is one value of a record: its name is the JSON key (and, upper
// case and spaced, the table's column). The values are strings, numbers,
// bools, time.Time, span, []string or JSON-shaped data (any).
type field struct {
	name  string
	value any
}

// A record is one thing a command prints, its fields in order.
type record []field

// span is a duration as jinid prints it: a Go duration, or "forever".
type span time.Duration

// spanOf is the span of a lease duration in milliseconds (apitypes.Forever
// is forever).
func spanOf(ms int64) span {
	if ms == apitypes.Forever || ms < 0 {
		return span(-1)
	}
	return span(time.Duration(ms) * time.Millisecond)
}

func (s span) String() string {
	if s < 0 {
		return "forever"
	}
	return time.Duration(s).String()
}

func (s span) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// round is s to the second (a lease's remaining time, read a moment
// after it was granted).
func (s span) round() span {
	if s < 0 {
		return s
	}
	return span(time.Duration(s).Round(time.Second))
}

// instant is a time in milliseconds since the epoch, as the API gives it:
// a time.Time, or nil for the end of time (a lease that is forever).
func instant(ms int64) any {
	if ms == apitypes.Forever || ms <= 0 || ms >= 1<<62 {
		return nil
	}
	return time.UnixMilli(ms).UTC()
}

// printer prints records in one format.
type printer struct {
	w      io.Writer
	format string
}

func (o *outputFlags) printer(w io.Writer) (*printer, error) {
	f, err := o.chosen()
	if err != nil {
		return nil, err
	}
	return &printer{w: w, format: f}, nil
}

// one prints a single thing.
func (p *printer) one(r record) error {
	switch p.format {
	case formatJSON, formatYAML:
		return p.object(r, "")
	case formatParsable:
		return p.parsableLine(r)
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	for _, f := range r {
		fmt.Fprintf(tw, "%s\t%s\n", f.name, text(f.value))
	}
	return tw.Flush()
}

// list prints a list of things, under key in JSON and YAML. A table
// shows each record's fields as columns; the empty list is its header
// alone.
func (p *printer) list(key string, rs []record, header record) error {
	switch p.format {
	case formatJSON:
		var b bytes.Buffer
		b.WriteString(`{"` + key + `":[`)
		for i, r := range rs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonOf(r))
		}
		b.WriteString("]}")
		return writeLine(p.w, b.Bytes())
	case formatYAML:
		var b bytes.Buffer
		b.WriteString(key + ":")
		writeYAMLList(&b, 0, rs)
		_, err := p.w.Write(b.Bytes())
		return err
	case formatParsable:
		for _, r := range rs {
			if err := p.parsableLine(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	cols := make([]string, len(header))
	for i, f := range header {
		cols[i] = column(f.name)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rs {
		vals := make([]string, len(r))
		for i, f := range r {
			vals[i] = text(f.value)
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
	}
	return tw.Flush()
}

// item prints one thing of a stream: a line of JSON (NDJSON), a YAML
// document, a parsable line, or the table's fields on one line.
func (p *printer) item(r record) error {
	switch p.format {
	case formatJSON, formatYAML:
		return p.object(r, "---\n")
	case formatParsable:
		return p.parsableLine(r)
	}
	parts := make([]string, 0, len(r))
	for _, f := range r {
		if v := text(f.value); v != "" {
			parts = append(parts, f.name+"="+v)
		}
	}
	_, err := fmt.Fprintln(p.w, strings.Join(parts, " "))
	return err
}

// object prints r as one JSON line, or as YAML after start (a stream's
// document marker).
func (p *printer) object(r record, start string) error {
	if p.format == formatJSON {
		return writeLine(p.w, jsonOf(r))
	}
	var b bytes.Buffer
	b.WriteString(start)
	writeYAML(&b, 0, r)
	_, err := p.w.Write(b.Bytes())
	return err
}

func (p *printer) parsableLine(r record) error {
	var b strings.Builder
	for i, f := range r {
		if i > 0 {
			b.WriteByte(';')
		}
		switch v := f.value.(type) {
		case []string, lister:
			// A list's elements, each escaped, joined by ",".
			l, ok := v.([]string)
			if !ok {
				l = v.(lister).elems()
			}
			for j, e := range l {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(escapeField(e))
			}
		case groupList:
			for j, g := range v {
				if j > 0 {
					b.WriteByte(',')
				}
				if g == "" {
					b.WriteString("(public)")
				} else {
					b.WriteString(escapeField(g))
				}
			}
		default:
			b.WriteString(escapeField(text(f.value)))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.w, b.String())
	return err
}

func writeLine(w io.Writer, b []byte) error {
	_, err := w.Write(append(b, '\n'))
	return err
}

// lister is a value that is a list in parsable lines (as []string is),
// whatever it is in JSON.
type lister interface{ elems() []string }

// column is a field's name as a table's header: serviceID is SERVICE ID.
func column(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) && !unicode.IsUpper(rune(name[i-1])) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// text is a value as a table shows it: what came from elsewhere (a
// service's name, a lookup service's groups) with its control
// characters escaped, never sent to the terminal (printable).
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		if v == "" {
			return "-"
		}
		return printable.String(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []string:
		if len(v) == 0 {
			return "-"
		}
		return printable.String(strings.Join(v, ","))
	case fmt.Stringer:
		return printable.String(v.String())
	case int, int64, uint64, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v) // JSON-shaped data: cannot fail (and escapes controls)
	return string(b)
}

// MarshalJSON makes a record inside a record's value (a list of them) an
// object too.
func (r record) MarshalJSON() ([]byte, error) { return jsonOf(r), nil }

// jsonOf is a record as a JSON object, its fields in order.
func jsonOf(r record) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.value)
		if err != nil {
			v = []byte("null") // only plain data is printed
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeYAML writes r as a YAML mapping at an indent. jinid writes its
// YAML itself, a small subset (block mappings and sequences, strings
// double-quoted as in JSON): a YAML library would add its weight to the
// tools binary for this one flag. The tests parse every output with
// go.yaml.in/yaml/v3 and compare it with the JSON.
func writeYAML(b *bytes.Buffer, indent int, r record) {
	if len(r) == 0 {
		b.WriteString(strings.Repeat(" ", indent) + "{}\n")
		return
	}
	for _, f := range r {
		b.WriteString(strings.Repeat(" ", indent) + yamlKey(f.name) + ":")
		writeYAMLValue(b, indent, plain(f.value))
	}
}

func writeYAMLList(b *bytes.Buffer, indent int, rs []record) {
	if len(rs) == 0 {
		b.WriteString(" []\n")
		return
	}
	b.WriteByte('\n')
	for _, r := range rs {
		var inner bytes.Buffer
		writeYAML(&inner, indent+2, r)
		s := inner.String()
		b.WriteString(strings.Repeat(" ", indent) + "- " + s[indent+2:])
	}
}

// plain is v as JSON data (records for objects, in the JSON's order of
// keys; slices, strings, numbers, bools, nil): YAML writes the keys as
// JSON does (it sorted nested ones).
func plain(v any) any {
	switch v.(type) {
	case string, bool, nil:
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	out, err := ordered(d)
	if err != nil {
		return nil
	}
	return out
}

// ordered reads the next JSON value of d, an object as a record.
func ordered(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		r := record{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := ordered(d)
			if err != nil {
				return nil, err
			}
			r = append(r, field{k.(string), v})
		}
		_, err = d.Token()
		return r, err
	case json.Delim('['):
		l := []any{}
		for d.More() {
			v, err := ordered(d)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err = d.Token()
		return l, err
	}
	return t, nil
}

// writeYAMLValue writes v after its key's colon.
func writeYAMLValue(b *bytes.Buffer, indent int, v any) {
	pad := strings.Repeat(" ", indent+2)
	switch v := v.(type) {
	case record:
		if len(v) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		for _, f := range v {
			b.WriteString(pad + yamlKey(f.name) + ":")
			writeYAMLValue(b, indent+2, f.value)
		}
	case []any:
		if len(v) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteByte('\n')
		for _, e := range v {
			b.WriteString(pad + "-")
			writeYAMLValue(b, indent+2, e)
		}
	default:
		b.WriteString(" " + yamlScalar(v) + "\n")
	}
}

func yamlScalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case string:
		q, _ := json.Marshal(v)
		return string(q)
	}
	q, _ := json.Marshal(fmt.Sprint(v))
	return string(q)
}

// yamlKey is a key bare when it is a plain word, quoted otherwise.
func yamlKey(k string) string {
	for _, r := range k {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '-') {
			return yamlScalar(k)
		}
	}
	if k == "" || strings.ContainsAny(k[:1], "-.0123456789") {
		return yamlScalar(k)
	}
	return k
}

// withOutput gives s the output flags; run gets the printer they choose.
func withOutput(s *spec, run func(inv *invocation, p *printer, args []string) error) *spec {
	var o outputFlags
	o.add(s)
	s.run = func(inv *invocation, args []string) error {
		p, err := o.printer(inv.stdout)
		if err != nil {
			return err
		}
		return run(inv, p, args)
	}
	return s
}

// raw prints one JSON object of a stream as it came (an event): the line
// itself in JSON, table and parsable, a document in YAML.
func (p *printer) raw(obj json.RawMessage) error {
	if p.format == formatYAML {
		var b bytes.Buffer
		writeYAMLValue(&b, -2, plain(obj))
		_, err := p.w.Write(append([]byte("---\n"), bytes.TrimPrefix(b.Bytes(), []byte("\n"))...))
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, obj); err != nil {
		b.Reset()
		b.Write(obj)
	}
	return writeLine(p.w, b.Bytes())
}

// bare prints r's first value alone in a table, for $(...) in scripts
// (T=$(jinid txn create)); the other formats print all of r.
func (p *printer) bare(r record) error {
	if p.format == formatTable {
		_, err := fmt.Fprintln(p.w, text(r[0].value))
		return err
	}
	return p.one(r)
}

// escapeField writes a value for parsable output: a byte that would split
// it (";", ","), the escape character, a control character, or a "("
// that could be read as "(public)" or "(none)" becomes \DDD, the byte in
// decimal (as avahi-browse writes them).
func escapeField(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' || c == ';' || c == ',' || c == '(' && i == 0 {
			fmt.Fprintf(&b, "\\%03d", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// blank is a table's empty cell (text shows "" as "-").
type blank struct{}

func (blank) String() string { return "" }

// groupList is groups as a table shows them, the public group as
// "(public)"; JSON keeps the names.
type groupList []string

func (g groupList) String() string { return discovery.GroupsText(g, ",") }

func (g groupList) MarshalJSON() ([]byte, error) { return json.Marshal(orEmpty(g)) }

// orEmpty is ss, or an empty list for nil: JSON says [] for none.
func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
