package opspage

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// svgAttribute returns the value of attribute name of the chart's first element matching
// tag.
func svgAttribute(t *testing.T, svg, tag, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<` + tag + `\b[^>]*\b` + name + `="([^"]*)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no <%s %s=...> in %s", tag, name, svg)
	}
	return m[1]
}

// Three polls a minute long (empty, 10 messages at +30 s, 7 at +60 s) draw: depth as a
// line on an axis up to 10; the age bound 0, 30 s, 60 s on an axis up to 100 s; the net
// drain unknown at the first poll, then 0 and 0.1/s, on an axis up to 1/s.
func TestChartOfKnownSamples(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	samples := []sample{
		{at: from, depth: 0, emptySeen: true},
		{at: from.Add(30 * time.Second), depth: 10, emptyFor: 30 * time.Second, emptySeen: true},
		{at: from.Add(time.Minute), depth: 7, emptyFor: time.Minute, emptySeen: true},
	}
	charts := map[string]string{}
	for _, s := range queueSeries(samples, false, false) {
		charts[s.Name] = string(drawChart(s, from, from.Add(time.Minute)))
	}
	// x: 52 + 358 × (seconds / 60); y: 24 + 106 × (1 - value / axis maximum).
	for name, want := range map[string]struct{ points, latest, line, axis string }{
		"depth":      {"3", "7", "52.0,130.0 231.0,24.0 410.0,55.8", "0 5 10"},
		"age":        {"3", "1m0s", "52.0,130.0 231.0,98.2 410.0,66.4", "0s 50s 1m40s"},
		"throughput": {"2", "0.10/s", "231.0,130.0 410.0,119.4", "0/s 0.50/s 1/s"},
	} {
		svg := charts[name]
		if got := svgAttribute(t, svg, "svg", "data-points"); got != want.points {
			t.Errorf("%s: data-points %s, want %s", name, got, want.points)
		}
		if got := svgAttribute(t, svg, "svg", "data-latest"); got != want.latest {
			t.Errorf("%s: data-latest %s, want %s", name, got, want.latest)
		}
		if got := svgAttribute(t, svg, "polyline", "points"); got != want.line {
			t.Errorf("%s: line %s, want %s", name, got, want.line)
		}
		var axis []string
		for _, m := range regexp.MustCompile(`<text class="chart-axis" x="48" y="[^"]*" text-anchor="end">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
			axis = append(axis, m[1])
		}
		if strings.Join(axis, " ") != want.axis {
			t.Errorf("%s: value axis %v, want %s", name, axis, want.axis)
		}
		for _, label := range []string{">-60s<", ">-30s<", ">now<"} {
			if !strings.Contains(svg, label) {
				t.Errorf("%s: no time label %s", name, label)
			}
		}
		if strings.Contains(svg, "style=") || strings.Contains(svg, "<script") {
			t.Errorf("%s: an inline style or script, which the page's CSP refuses: %s", name, svg)
		}
	}
}

// Unknown values break the line: a lone known value between them is a dot. Before any
// known value the heading says so. Text is escaped.
func TestChartGapsAndEscaping(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	s := series{Name: "x", Title: `a <b> & "c"`, Format: countText, Points: []point{
		{At: from, Value: 1, Known: true}, {At: from.Add(10 * time.Second)}, {At: from.Add(20 * time.Second), Value: 2, Known: true},
		{At: from.Add(30 * time.Second), Value: 2, Known: true},
	}}
	svg := string(drawChart(s, from, from.Add(time.Minute)))
	if n := strings.Count(svg, "<circle"); n != 1 || strings.Count(svg, "<polyline") != 1 {
		t.Fatalf("want one dot and one line:\n%s", svg)
	}
	if !strings.Contains(svg, `<title>a &lt;b&gt; &amp; &#34;c&#34;: 2</title>`) || strings.Contains(svg, "<b>") {
		t.Fatalf("title not escaped:\n%s", svg)
	}
	empty := string(drawChart(series{Name: "y", Title: "Depth", Format: countText}, from, from.Add(time.Hour)))
	if !strings.Contains(empty, `data-latest="no data yet"`) || !strings.Contains(empty, `data-points="0"`) || strings.Contains(empty, "<polyline") ||
		!strings.Contains(empty, ">-60m<") || !strings.Contains(empty, ">-30m<") {
		t.Fatalf("chart without data:\n%s", empty)
	}
}
