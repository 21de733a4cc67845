package config

import (
	"strings"
	"testing"
)

// TestPythonMemoryTotal: tools.python.memory_total_mb, the sum the running sandbox programs'
// memory limits may reach, is refused below one program's limit (memory_mb), naming the key, its
// line and column and both values; left at 0 (half of the machine's memory) it keeps the hash
// and the rendered file of every configuration that does not set it.
func TestPythonMemoryTotal(t *testing.T) {
	path := write(t, "tools:\n  python:\n    memory_mb: 4096\n    memory_total_mb: 2048\n")
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+":4:22: tools.python.memory_total_mb: must be 0 (half of the machine's memory) or at least memory_mb (4096), the limit of one program; got 2048") {
		t.Fatalf("a total below one limit: %v", err)
	}
	c, err := Load(write(t, "tools:\n  python:\n    concurrency: 4\n    memory_total_mb: 8192\n"))
	if err != nil || c.Tools.Python.MemoryTotalMB != 8192 {
		t.Fatalf("a total of four limits: %v", err)
	}
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Tools.Python.MemoryTotalMB != 0 || strings.Contains(string(def.YAML()), "memory_total_mb") || strings.Contains(string(def.canonicalJSON()), "memory_total_mb") {
		t.Fatal("the default total is not 0 or is written into the hash and the rendered file")
	}
}
