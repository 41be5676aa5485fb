package acemq

import "testing"

func TestParseProfile(t *testing.T) {
	for in, want := range map[string]Profile{"": ProfileCurrent, "current": ProfileCurrent, "0.5.0": Profile050, "0.3.0": Profile030} {
		if got, err := ParseProfile(in); err != nil || got != want {
			t.Errorf("ParseProfile(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseProfile("0.7.12"); err == nil {
		t.Error("0.7.12 is a .NET profile and must be refused")
	}
}

func TestEveryMutantHasARole(t *testing.T) {
	if len(Mutants) != 30 || len(mutantRoles) != len(Mutants) {
		t.Fatalf("%d mutants listed, %d with roles; the catalogue has 30", len(Mutants), len(mutantRoles))
	}
	for _, m := range Mutants {
		role := mutantRoles[m]
		if got, err := ParseMutant(string(m), role); err != nil || got != m {
			t.Errorf("ParseMutant(%q, %s) = %q, %v", m, role, got, err)
		}
		other := RoleRequester
		if role == RoleRequester {
			other = RoleResponder
		}
		if _, err := ParseMutant(string(m), other); err == nil {
			t.Errorf("ParseMutant(%q, %s) accepted a mutant of the other role", m, other)
		}
	}
	if _, err := ParseMutant("no-such-mutant", RoleRequester); err == nil {
		t.Error("unknown mutant accepted")
	}
	if m, err := ParseMutant("", RoleResponder); err != nil || m != NoMutant {
		t.Errorf("empty mutant = %q, %v", m, err)
	}
}
