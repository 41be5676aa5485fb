package main

// The binding's policy types against the catalogue's `policies:`: every
// field hello offers as a knob is a catalogue knob of that side, and defaults
// to the catalogue's default, so a knob protocol 4 leaves out is the
// catalogue's value. The catalogue writes each knob as a one-line flow
// mapping, read here with a small parser rather than a YAML module Debian's
// Go lacks. No mutant or profile is read: the harness resolves those.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"acemq-interop/peers/go/internal/policy"
)

func catalogueLines(t *testing.T) []string {
	dir, _ := os.Getwd()
	for {
		data, err := os.ReadFile(filepath.Join(dir, "catalogue", "catalogue.yaml"))
		if err == nil {
			return strings.Split(string(data), "\n")
		}
		if parent := filepath.Dir(dir); parent != dir {
			dir = parent
			continue
		}
		t.Skip("no catalogue/catalogue.yaml above this directory")
	}
}

// section is the lines under a top-level key, up to the next one.
func section(lines []string, key string) []string {
	var out []string
	in := false
	for _, l := range lines {
		if l != "" && l[0] != ' ' && l[0] != '#' {
			in = strings.HasPrefix(l, key+":")
			continue
		}
		if in {
			out = append(out, l)
		}
	}
	return out
}

// flow parses "k: v, k2: [a, b]" into k -> "v", k2 -> "[a, b]"; a quoted
// scalar ("x-") is unquoted.
func flow(text string) map[string]string {
	out := map[string]string{}
	depth, start := 0, 0
	var parts []string
	for i, r := range text {
		switch r {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, text[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, text[start:])
	for _, p := range parts {
		if k, v, ok := strings.Cut(p, ":"); ok {
			v = strings.TrimSpace(v)
			if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
				v = u
			}
			out[strings.TrimSpace(k)] = v
		}
	}
	return out
}

// yamlText is a field's value as the catalogue writes it: [a, b] for a list.
func yamlText(f reflect.Value) string {
	if f.Kind() != reflect.Slice {
		return fmt.Sprint(f.Interface())
	}
	items := make([]string, f.Len())
	for i := range items {
		items[i] = fmt.Sprint(f.Index(i).Interface())
	}
	return "[" + strings.Join(items, ", ") + "]"
}

func TestEveryPolicyFieldIsACatalogueKnobAtItsDefault(t *testing.T) {
	defaults := map[string]map[string]string{"requester": {}, "responder": {}}
	var side string
	for _, l := range section(catalogueLines(t), "policies") {
		key, rest, _ := strings.Cut(strings.TrimSpace(l), ":")
		switch len(l) - len(strings.TrimLeft(l, " ")) {
		case 2:
			side = key
		case 4:
			// {default: VALUE, ...}: the default is the first entry.
			defaults[side][key] = flow(strings.TrimPrefix(strings.TrimSpace(rest), "{"))["default"]
		}
	}
	for side, v := range map[string]interface{}{"requester": policy.DefaultRequester(), "responder": policy.DefaultResponder()} {
		p := reflect.ValueOf(v)
		for i := 0; i < p.NumField(); i++ {
			knob := knobOf(p.Type().Field(i))
			if knob == "" {
				continue
			}
			want, ok := defaults[side][knob]
			if got := yamlText(p.Field(i)); !ok || got != want {
				t.Errorf("%s knob %s: the binding's default %s, the catalogue's %q (a knob: %v)", side, knob, got, want, ok)
			}
		}
	}
}
