package leaders

import "testing"

func TestCacheSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"32768K\n", 32 << 20}, {"1M", 1 << 20}, {"512", 512}, {"300M", 300 << 20}} {
		if got, err := ParseCacheSize(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseCacheSize(%q) = %d, %v", tc.in, got, err)
		}
	}
	for _, bad := range []string{"big", "", "0", "-1K"} {
		if _, err := ParseCacheSize(bad); err == nil {
			t.Errorf("ParseCacheSize(%q): want an error", bad)
		}
	}
	if n, err := LLCBytes(); err == nil && n <= 0 {
		t.Errorf("LLCBytes = %d", n)
	}
	if n := OnlineCPUs(); n < 1 {
		t.Errorf("OnlineCPUs = %d", n)
	}
}
