package store

import "testing"

// Ids are compared and stored in one spelling: every form uuid.Parse accepts comes out
// canonical, and a canonical id comes back as it was, without an allocation (each turn parses
// two).
func TestParseID(t *testing.T) {
	const canon = "6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a10"
	for _, in := range []string{
		canon,
		"6F0B8A52-4A55-4F43-9C35-3F1F6E5D2A10",
		"{6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a10}",
		"urn:uuid:6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a10",
		"6f0b8a524a554f439c353f1f6e5d2a10",
	} {
		if got, ok := parseID(in); !ok || got != canon {
			t.Errorf("parseID(%q) = %q, %v; want %q, true", in, got, ok, canon)
		}
	}
	for _, in := range []string{"", "agent-1", "6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a1", "6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a1g"} {
		if got, ok := parseID(in); ok {
			t.Errorf("parseID(%q) = %q, true; want false", in, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseID(canon) }); n != 0 {
		t.Errorf("parseID of a canonical id: %v allocations, want 0", n)
	}
}
