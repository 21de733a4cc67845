package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Metadata keys stored in every file's schema.
const (
	keySchema       = "evosteer.schema"        // "name@version", see Table.ID
	keyRun          = "evosteer.run"           // Lineage.Run
	keyStep         = "evosteer.step"          // Lineage.Step, decimal
	keyStage        = "evosteer.stage"         // Lineage.Stage
	keyConfigSHA256 = "evosteer.config_sha256" // Lineage.ConfigSHA256
	keyInputs       = "evosteer.inputs"        // Lineage.Inputs, canonical JSON object
)

// Lineage says where a file came from. It is stored as schema metadata so
// that every file can be traced to its run, step, stage, configuration and
// exact inputs without a side file.
type Lineage struct {
	Run          string            // run name
	Step         int               // training step (0 = init)
	Stage        string            // stage that wrote the file
	ConfigSHA256 string            // hash of the resolved configuration
	Inputs       map[string]string // input path (relative to run dir) -> sha256 hex
}

// metadata renders the lineage of table t. Keys are always in the same order
// and Inputs is canonical JSON (sorted keys, no HTML escaping), so equal
// lineages give equal bytes.
func (l Lineage) metadata(t *Table) (arrow.Metadata, error) {
	if l.Step < 0 {
		return arrow.Metadata{}, fmt.Errorf("lineage: negative step %d", l.Step)
	}
	inputs, err := canonicalJSON(l.Inputs)
	if err != nil {
		return arrow.Metadata{}, fmt.Errorf("lineage: inputs: %w", err)
	}
	return arrow.NewMetadata(
		[]string{keySchema, keyRun, keyStep, keyStage, keyConfigSHA256, keyInputs},
		[]string{t.ID(), l.Run, strconv.Itoa(l.Step), l.Stage, l.ConfigSHA256, inputs},
	), nil
}

func canonicalJSON(m map[string]string) (string, error) {
	if m == nil {
		m = map[string]string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil { // encoding/json sorts map keys
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// parseID splits "name@version".
func parseID(id string) (name string, version int, err error) {
	i := strings.LastIndexByte(id, '@')
	if i <= 0 {
		return "", 0, fmt.Errorf("metadata %s = %q: want name@version", keySchema, id)
	}
	name, v := id[:i], id[i+1:]
	version, err = strconv.Atoi(v)
	if err != nil || strconv.Itoa(version) != v {
		return "", 0, fmt.Errorf("metadata %s = %q: version is not an integer", keySchema, id)
	}
	return name, version, nil
}

// parseLineage reads the lineage keys; every key must be present, since every
// file is written by Table.Write.
func parseLineage(md arrow.Metadata) (Lineage, error) {
	get := func(k string) (string, error) {
		i := md.FindKey(k)
		if i < 0 {
			return "", fmt.Errorf("metadata key %s missing", k)
		}
		return md.Values()[i], nil
	}
	var l Lineage
	var err error
	if l.Run, err = get(keyRun); err != nil {
		return l, err
	}
	if l.Stage, err = get(keyStage); err != nil {
		return l, err
	}
	if l.ConfigSHA256, err = get(keyConfigSHA256); err != nil {
		return l, err
	}
	step, err := get(keyStep)
	if err != nil {
		return l, err
	}
	if l.Step, err = strconv.Atoi(step); err != nil || l.Step < 0 {
		return l, fmt.Errorf("metadata %s = %q: not a step number", keyStep, step)
	}
	inputs, err := get(keyInputs)
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal([]byte(inputs), &l.Inputs); err != nil || l.Inputs == nil {
		return l, fmt.Errorf("metadata %s: not a JSON object of strings", keyInputs)
	}
	if len(l.Inputs) == 0 {
		l.Inputs = nil // an empty map was written from nil or empty; read both as nil
	}
	return l, nil
}

// InputDiffs says how the inputs of got differ from those of want, one phrase per input in sorted
// key order, for a message saying why a kept file is not reused: "without NAME", "NAME, which THIS
// does not read", "NAME sha256 G, THIS's W". name(key) names an input; "" leaves it out.
func InputDiffs(got, want map[string]string, this string, name func(key string) string) []string {
	keys := maps.Clone(got)
	maps.Copy(keys, want)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		n := name(k)
		if n == "" {
			continue
		}
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			diffs = append(diffs, "without "+n)
		case !wok:
			diffs = append(diffs, fmt.Sprintf("%s, which %s does not read", n, this))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s sha256 %s, %s's %s", n, g, this, w))
		}
	}
	return diffs
}
