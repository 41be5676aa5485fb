package main

// The table in catalogue.go must match catalogue/catalogue.yaml exactly:
// names, sides and policy values. The catalogue writes every mutant and every
// peer's profile settings as one-line flow mappings, which this test reads
// with a small parser rather than a YAML module Debian's Go lacks here.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
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

// settings is what a policy changed from its default, knob -> value as the
// catalogue writes it.
func settings(changed, base interface{}) map[string]string {
	out := map[string]string{}
	c, b := reflect.ValueOf(changed), reflect.ValueOf(base)
	for i := 0; i < c.NumField(); i++ {
		tag := c.Type().Field(i).Tag.Get("policy")
		if tag == "-" || reflect.DeepEqual(c.Field(i).Interface(), b.Field(i).Interface()) {
			continue
		}
		f := c.Field(i)
		if f.Kind() == reflect.Slice {
			var items []string
			for j := 0; j < f.Len(); j++ {
				items = append(items, fmt.Sprint(f.Index(j).Interface()))
			}
			out[tag] = "[" + strings.Join(items, ", ") + "]"
		} else {
			out[tag] = fmt.Sprint(f.Interface())
		}
	}
	return out
}

func requesterSettings(f func(*policy.Requester)) map[string]string {
	p := policy.DefaultRequester()
	if f != nil {
		f(&p)
	}
	return settings(p, policy.DefaultRequester())
}

func responderSettings(f func(*policy.Responder)) map[string]string {
	p := policy.DefaultResponder()
	if f != nil {
		f(&p)
	}
	return settings(p, policy.DefaultResponder())
}

var mutantLine = regexp.MustCompile(`^  ([a-z0-9-]+):\s*\{side: (\w+), clause: [^,]+, policy: \{([^}]*)\}`)

func TestMutantTableMatchesTheCatalogue(t *testing.T) {
	var names []string
	for _, l := range section(catalogueLines(t), "mutants") {
		m := mutantLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		mu, err := findMutant(&m[1])
		if err != nil && strings.Contains(l, "only_where:") {
			// A defect only some clients can have; amqp091-go cannot have this one
			// (e.g. it never sends an empty reply_to: an empty string is left out).
			continue
		}
		names = append(names, m[1])
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		if mu.side != m[2] {
			t.Errorf("%s: side %s, the catalogue says %s", m[1], mu.side, m[2])
		}
		got := requesterSettings(mu.requester)
		if mu.side == "responder" {
			got = responderSettings(mu.responder)
		}
		if want := flow(m[3]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sets %v, the catalogue says %v", m[1], got, want)
		}
	}
	if !reflect.DeepEqual(names, mutantNames()) {
		t.Errorf("mutants %v, the catalogue lists %v", mutantNames(), names)
	}
}

func TestProfileTableMatchesTheCatalogue(t *testing.T) {
	type sides struct{ requester, responder map[string]string }
	want := map[string]*sides{"current": {map[string]string{}, map[string]string{}}}
	var profile, peer string
	for _, l := range section(catalogueLines(t), "profiles") {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		key, value, _ := strings.Cut(strings.TrimSpace(l), ":")
		value = strings.TrimSpace(value)
		switch indent {
		case 2:
			profile = key
		case 6:
			peer = key
			if peer == peerName {
				want[profile] = &sides{map[string]string{}, map[string]string{}}
			}
		case 8:
			if peer != peerName {
				continue
			}
			m := flow(strings.Trim(value, "{}"))
			if key == "requester" {
				want[profile].requester = m
			} else {
				want[profile].responder = m
			}
		}
	}
	var wantNames []string
	for name := range want {
		wantNames = append(wantNames, name)
	}
	got := profileNames()
	sort.Strings(wantNames)
	sort.Strings(got)
	if !reflect.DeepEqual(got, wantNames) {
		t.Fatalf("profiles %v, the catalogue lists %v for %s", got, wantNames, peerName)
	}
	for _, p := range profiles {
		if r := requesterSettings(p.requester); !reflect.DeepEqual(r, want[p.name].requester) {
			t.Errorf("%s requester: %v, the catalogue says %v", p.name, r, want[p.name].requester)
		}
		if r := responderSettings(p.responder); !reflect.DeepEqual(r, want[p.name].responder) {
			t.Errorf("%s responder: %v, the catalogue says %v", p.name, r, want[p.name].responder)
		}
	}
}

func TestEveryPolicyFieldIsACatalogueKnob(t *testing.T) {
	lines := section(catalogueLines(t), "policies")
	knobs := map[string]map[string]string{"requester": {}, "responder": {}}
	var side string
	for _, l := range lines {
		key, rest, _ := strings.Cut(strings.TrimSpace(l), ":")
		switch len(l) - len(strings.TrimLeft(l, " ")) {
		case 2:
			side = key
		case 4:
			// {default: VALUE, ...}: the default is the first entry.
			knobs[side][key] = flow(strings.TrimPrefix(strings.TrimSpace(rest), "{"))["default"]
		}
	}
	for side, v := range map[string]interface{}{"requester": policy.DefaultRequester(), "responder": policy.DefaultResponder()} {
		typ := reflect.TypeOf(v)
		// Every field, at its default, against a zero value: nothing is
		// left out as equal.
		fields := settings(v, reflect.Zero(typ).Interface())
		for i := 0; i < typ.NumField(); i++ {
			if tag := typ.Field(i).Tag.Get("policy"); tag != "-" && fields[tag] == "" {
				fields[tag] = "false"
			}
		}
		if !reflect.DeepEqual(fields, knobs[side]) {
			t.Errorf("%s policy fields %v, the catalogue's knobs %v", side, fields, knobs[side])
		}
	}
}
