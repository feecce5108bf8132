package opspage

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/opspage/humantime"
)

// The size of a chart, in SVG user units (pixels at 100 %), and the margins that hold
// its axis labels.
const (
	chartWidth, chartHeight         = 420, 150
	chartLeft, chartRight           = 52, 10
	chartTop, chartBottom           = 24, 20
	plotWidth, plotHeight   float64 = chartWidth - chartLeft - chartRight, chartHeight - chartTop - chartBottom
)

// series is one chart's data: a value per kept poll, known or not.
type series struct {
	// Name identifies the chart (data-chart), Title heads it.
	Name, Title string
	// Format writes a value with its unit, for the axis and the latest value.
	Format func(float64) string
	Points []point
}

type point struct {
	At    time.Time
	Value float64
	Known bool
}

// queueSeries are the charts of one queue's kept polls: depth, the oldest message's age
// (from Ages, or the bound) and the throughput between consecutive polls.
func queueSeries(samples []sample, fromCounters, fromAges bool) []series {
	depth := series{Name: "depth", Title: "Depth (visible + in flight + delayed)", Format: countText}
	age := series{Name: "age", Title: "Oldest message, at most (since last empty)", Format: secondsText}
	throughput := series{Name: "throughput", Title: "Throughput (net drain, at least)", Format: rateText}
	if fromCounters {
		throughput.Title = "Throughput (handler calls returned)"
	}
	if fromAges {
		age.Title = "Oldest message"
	}
	for i, s := range samples {
		depth.Points = append(depth.Points, point{At: s.at, Value: float64(s.depth), Known: true})
		if fromAges {
			age.Points = append(age.Points, point{At: s.at, Value: s.age.Seconds(), Known: s.ageKnown})
		} else {
			age.Points = append(age.Points, point{At: s.at, Value: s.emptyFor.Seconds(), Known: s.emptySeen})
		}
		p := point{At: s.at}
		if i > 0 {
			r := rates(samples[i-1], s, fromCounters)
			p.Value, p.Known = r.PerSecond, r.Known
		}
		throughput.Points = append(throughput.Points, p)
	}
	return []series{depth, age, throughput}
}

// drawChart draws s from from to to as an inline SVG: a line per run of known values, a
// dot for a lone one, the axis from 0 to a round maximum, the time axis in minutes (or
// seconds, under two minutes) before to, and the latest known value in the heading.
// Every text is escaped; the SVG uses presentation attributes only (the page's
// Content-Security-Policy refuses inline styles) and the page's stylesheet colours it.
func drawChart(s series, from, to time.Time) template.HTML {
	top := 0.0
	var last *point
	for i := range s.Points {
		if p := &s.Points[i]; p.Known && !p.At.Before(from) {
			top, last = max(top, p.Value), p
		}
	}
	top = roundUp(top)
	span := to.Sub(from).Seconds()
	x := func(at time.Time) float64 { return chartLeft + plotWidth*math.Max(0, at.Sub(from).Seconds())/span }
	y := func(v float64) float64 { return chartTop + plotHeight*(1-v/top) }
	latest := "no data yet"
	if last != nil {
		latest = s.Format(last.Value)
	}
	var b strings.Builder
	esc := template.HTMLEscapeString
	known := 0
	for _, p := range s.Points {
		if p.Known && !p.At.Before(from) {
			known++
		}
	}
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" data-points="%d" data-latest="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s: %s">`,
		esc(s.Name), known, esc(latest), chartWidth, chartHeight, chartWidth, chartHeight, esc(s.Title), esc(latest))
	fmt.Fprintf(&b, `<title>%s: %s</title>`, esc(s.Title), esc(latest))
	fmt.Fprintf(&b, `<text class="chart-title" x="%d" y="14">%s: <tspan class="chart-latest">%s</tspan></text>`, chartLeft, esc(s.Title), esc(latest))
	for _, fraction := range []float64{0, 0.5, 1} {
		gy := y(top * fraction)
		fmt.Fprintf(&b, `<line class="chart-grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, chartLeft, gy, chartWidth-chartRight, gy)
		fmt.Fprintf(&b, `<text class="chart-axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, chartLeft-4, gy+4, esc(s.Format(top*fraction)))
	}
	for _, fraction := range []float64{0, 0.5, 1} {
		label := "now"
		if before := span * (1 - fraction); before >= 120 {
			label = fmt.Sprintf("-%dm", int(math.Round(before/60)))
		} else if fraction < 1 {
			label = fmt.Sprintf("-%ds", int(math.Round(before)))
		}
		anchor := map[float64]string{0: "start", 0.5: "middle", 1: "end"}[fraction]
		fmt.Fprintf(&b, `<text class="chart-axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, chartLeft+plotWidth*fraction, chartHeight-4, anchor, label)
	}
	var run []string
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			xy := strings.Split(run[0], ",")
			fmt.Fprintf(&b, `<circle class="chart-dot" cx="%s" cy="%s" r="2.5"/>`, xy[0], xy[1])
		default:
			fmt.Fprintf(&b, `<polyline class="chart-line" fill="none" points="%s"/>`, strings.Join(run, " "))
		}
		run = run[:0]
	}
	for _, p := range s.Points {
		if !p.Known || p.At.Before(from) {
			flush()
			continue
		}
		run = append(run, fmt.Sprintf("%.1f,%.1f", x(p.At), y(p.Value)))
	}
	flush()
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built above from numbers and escaped text only
}

// roundUp returns the axis maximum for values up to v: 1, 2 or 5 times a power of ten,
// at least 1.
func roundUp(v float64) float64 {
	if v <= 1 {
		return 1
	}
	power := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*power {
			return m * power
		}
	}
	return 10 * power
}

func countText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func rateText(v float64) string {
	if v >= 10 || v == math.Trunc(v) {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "/s"
}

func secondsText(v float64) string {
	return humantime.Short((time.Duration(v * float64(time.Second))).Round(time.Second))
}
