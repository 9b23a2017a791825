package backend

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		name string
	}{
		{"native", Spec{}, "native"},
		{"MPI", Spec{}, "native"},
		{"dpml", Spec{DPML: true}, "dpml"},
		{"dpml-l4", Spec{DPML: true, Leaders: 4}, "dpml-l4"},
		{"dpml-l8-k2", Spec{DPML: true, Leaders: 8, Pipeline: 2}, "dpml-l8-k2"},
		{"dpml-k2", Spec{DPML: true, Pipeline: 2}, "dpml-k2"},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.name {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tc.name)
		}
		if back, _ := Parse(got.String()); back != got {
			t.Errorf("%q does not parse back", got.String())
		}
	}
	for _, bad := range []string{"", "dpml-", "dpml-x4", "dpml-l0", "dpml-lx", "han"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want error", bad)
		}
	}
	f := Flags{Backend: "dpml", Leaders: 2}
	if s, err := f.Spec(); err != nil || s.Leaders != 2 {
		t.Errorf("flags %+v: %+v, %v", f, s, err)
	}
	f = Flags{Backend: "native", Leaders: 2}
	if _, err := f.Spec(); err == nil {
		t.Error("-leaders with native: want error")
	}
}
