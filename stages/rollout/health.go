package rollout

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/episode"
)

// maxCauses bounds the causes a health failure lists; past it, it says how many it left out.
const maxCauses = 10

var (
	durationText = regexp.MustCompile(`(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|h|m|s))+`)
	// numberText is a number, unless it is an HTTP status, which tells causes apart.
	numberText = regexp.MustCompile(`(HTTP [0-9]{3}\b)|[0-9]+(?:\.[0-9]+)?`)
)

// causeOf is the cause an unhealthy reason states: its text with every duration and every
// number but an HTTP status as #, so that reasons differing only in a wait, a count or a port
// are one cause, and a 429 and a 503 are two.
func causeOf(reason string) string {
	return numberText.ReplaceAllString(durationText.ReplaceAllString(reason, "#"), "$1#")
}

// cause is the episodes of one cause: how many, the first reason in episode order, and whether
// the others' numbers differ from it.
type cause struct {
	n     int
	first string
	vary  bool
}

// checkHealth fails the stage when too many episodes were unhealthy, naming the causes, the
// most frequent first, each once with its count, and how many causes it did not list. Reasons
// are a server's or a model's text: they are escaped for the terminal.
func checkHealth(eps []episode.Played, maxShare float64) error {
	byCause := map[string]*cause{}
	var causes []*cause
	bad := 0
	for _, ep := range eps {
		if ep.Episode.Healthy {
			continue
		}
		bad++
		reason := *ep.Episode.UnhealthyReason
		key := causeOf(reason)
		c := byCause[key]
		if c == nil {
			c = &cause{first: reason}
			byCause[key] = c
			causes = append(causes, c)
		}
		c.n++
		c.vary = c.vary || reason != c.first
	}
	if len(eps) == 0 || float64(bad)/float64(len(eps)) <= maxShare {
		return nil
	}
	sort.Slice(causes, func(i, j int) bool {
		return causes[i].n > causes[j].n || (causes[i].n == causes[j].n && causes[i].first < causes[j].first)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d episodes unhealthy (more than rollout.max_unhealthy_share = %g); %d %s", bad, len(eps), maxShare, len(causes), plural(len(causes), "cause"))
	if len(causes) > maxCauses {
		fmt.Fprintf(&b, ", the %d most frequent", maxCauses)
	}
	b.WriteString(":")
	for _, c := range causes[:min(maxCauses, len(causes))] {
		fmt.Fprintf(&b, "\n  %d x %s", c.n, arrowfmt.Escape(c.first))
		if c.vary {
			b.WriteString(" (numbers vary)")
		}
	}
	if len(causes) > maxCauses {
		rest := 0
		for _, c := range causes[maxCauses:] {
			rest += c.n
		}
		left := len(causes) - maxCauses
		fmt.Fprintf(&b, "\n  and %d more %s (%d %s)", left, plural(left, "cause"), rest, plural(rest, "episode"))
	}
	return errors.New(b.String())
}

// plural is noun for one, nouns for another count.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
