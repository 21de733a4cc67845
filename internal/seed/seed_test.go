package seed

import "testing"

func TestDeriveMatchesReferenceRule(t *testing.T) {
	// sha256("batch-000001/t/current/0") starts with these 15 hex digits (python:
	// int(hashlib.sha256(b"batch-000001/t/current/0").hexdigest()[:15], 16)).
	const key = "batch-000001/t/current/0"
	got := Derive(0, "batch-000001", "t", "current", "0")
	if got != Derive(0, key) {
		t.Fatal("parts are not joined by /")
	}
	if got != 839557035912161191 {
		t.Fatalf("Derive(0, %q) = %d, want 839557035912161191", key, got)
	}
	if Derive(7, key) != got+7 {
		t.Fatal("base is not added")
	}
	if Derive(1<<63-1, key) != got-1 {
		t.Fatal("sum is not reduced mod 2^63")
	}
	if Derive(0, "a") == Derive(0, "b") {
		t.Fatal("different keys collide")
	}
}
