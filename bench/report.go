package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// info describes the machine and the versions measured.
type info struct {
	cpus     int
	memory   string
	cpuModel string
	kernel   string
	versions map[string]string
}

func machineInfo(ctx context.Context, root string) info {
	i := info{cpus: runtime.NumCPU(), versions: map[string]string{"go": runtime.Version()}}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kB float64
				fmt.Sscanf(strings.TrimSpace(rest), "%f", &kB)
				i.memory = fmt.Sprintf("%.1f GiB", kB/1024/1024)
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				i.cpuModel = strings.TrimSpace(value)
				break
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "localstack", "requirements.txt")); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "moto[server]=="); ok {
				i.versions["moto (DynamoDB)"] = rest
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		i.kernel = strings.TrimSpace(string(data))
	}
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range build.Deps {
			switch dep.Path {
			case "github.com/aws/aws-sdk-go-v2/service/sqs", "github.com/aws/aws-sdk-go-v2/service/dynamodb":
				i.versions[dep.Path] = dep.Version
			}
		}
	}
	health, err := http.NewRequestWithContext(ctx, http.MethodGet, os.Getenv("AWS_ENDPOINT_URL_SQS")+"/_localstack/health", nil)
	if err == nil {
		if response, err := http.DefaultClient.Do(health); err == nil {
			var body struct{ Version string }
			_ = json.NewDecoder(response.Body).Decode(&body)
			response.Body.Close()
			if body.Version != "" {
				i.versions["LocalStack (SQS)"] = body.Version
			}
		}
	}
	return i
}

// stat is the summary of one contender in one mode.
type stat struct {
	contender    contender
	mode         string
	runs         int
	failed       int
	perSecond    []float64
	callsPerMsg  []float64
	writesPerNew []float64
	writesPerDup []float64
	median       result // the run with the median throughput, for the call breakdown
}

type summary struct {
	m        int
	repeats  int
	stats    []*stat
	ratios   map[string][]float64 // per-repeat ratios for the summary line
	duration time.Duration
	info     info
	notes    []string
}

func summarize(opts options, contenders []contender, results []result) *summary {
	s := &summary{m: opts.m, repeats: opts.repeats, ratios: map[string][]float64{}}
	index := map[string]*stat{}
	for _, mode := range opts.modes {
		for _, c := range contenders {
			st := &stat{contender: c, mode: mode}
			s.stats = append(s.stats, st)
			index[c.name+"/"+mode] = st
		}
	}
	byRun := map[string]map[int]float64{}
	for _, r := range results {
		st := index[r.contender+"/"+r.mode]
		st.runs++
		if r.err != nil {
			st.failed++
			continue
		}
		m := float64(opts.m)
		st.perSecond = append(st.perSecond, r.perSecond(opts.m))
		st.callsPerMsg = append(st.callsPerMsg, float64(sum(r.sqsCalls))/m)
		if st.contender.idempotent {
			st.writesPerNew = append(st.writesPerNew, float64(ddbWrites(r.ddbCalls))/m)
			if r.dupDDBCalls != nil {
				st.writesPerDup = append(st.writesPerDup, float64(ddbWrites(r.dupDDBCalls))/m)
			}
		}
		key := r.contender + "/" + r.mode
		if byRun[key] == nil {
			byRun[key] = map[int]float64{}
		}
		byRun[key][r.repeat] = r.perSecond(opts.m)
	}
	for _, st := range s.stats {
		target := median(st.perSecond)
		for _, r := range results {
			if r.contender == st.contender.name && r.mode == st.mode && r.err == nil && r.perSecond(opts.m) == target {
				st.median = r
			}
		}
	}
	ratio := func(name, a, b string) {
		for repeat, x := range byRun[a] {
			if y, ok := byRun[b][repeat]; ok && y > 0 {
				s.ratios[name] = append(s.ratios[name], x/y)
			}
		}
	}
	ratio("poller_vs_ceiling", "poller/noop", "ceiling/noop")
	ratio("poller_vs_ceiling_slow", "poller/slow", "ceiling/slow")
	ratio("poller_vs_sqs_consumer", "poller/noop", "sqs_consumer/noop")
	ratio("poller_vs_sqs_consumer_slow", "poller/slow", "sqs_consumer/slow")
	ratio("poller_vs_lambda_esm", "poller/noop", "lambda_esm/noop")
	ratio("poller_vs_lambda_esm_slow", "poller/slow", "lambda_esm/slow")
	return s
}

func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func (s *summary) find(name, mode string) *stat {
	for _, st := range s.stats {
		if st.contender.name == name && st.mode == mode {
			return st
		}
	}
	return nil
}

func format(value float64, digits int) string {
	if math.IsNaN(value) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", digits, value)
}

// line is the one-line result.
func (s *summary) line() string {
	metric := func(values []float64) string { return format(median(values), 2) }
	callsPerMsg, writesNew, writesDup := "n/a", "n/a", "n/a"
	if st := s.find("poller", "noop"); st != nil {
		callsPerMsg = format(median(st.callsPerMsg), 3)
	}
	if st := s.find("poller_idempotency", "noop"); st != nil {
		writesNew, writesDup = metric(st.writesPerNew), metric(st.writesPerDup)
	}
	return fmt.Sprintf("bench: poller_vs_ceiling=%s poller_vs_sqs_consumer=%s poller_vs_sqs_consumer_slow=%s sqs_calls_per_msg=%s ddb_writes_per_new=%s ddb_writes_per_dup=%s",
		metric(s.ratios["poller_vs_ceiling"]), metric(s.ratios["poller_vs_sqs_consumer"]), metric(s.ratios["poller_vs_sqs_consumer_slow"]),
		callsPerMsg, writesNew, writesDup)
}

func spread(values []float64) string {
	if len(values) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f–%.0f", slices.Min(values), slices.Max(values))
}

func breakdown(counts map[string]int64, m int) string {
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, float64(counts[name])/float64(m)))
	}
	return strings.Join(parts, ", ")
}

// table is the plain-text results table.
func (s *summary) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-5s %9s %11s %13s %12s %12s\n", "contender", "mode", "msg/s", "range", "SQS calls/msg", "DDB wr/new", "DDB wr/dup")
	for _, st := range s.stats {
		fmt.Fprintf(&b, "%-32s %-5s %9s %11s %13s %12s %12s\n", st.contender.label, st.mode,
			format(median(st.perSecond), 0), spread(st.perSecond), format(median(st.callsPerMsg), 3),
			optional(st.writesPerNew), optional(st.writesPerDup))
	}
	return b.String()
}

func optional(values []float64) string {
	if len(values) == 0 {
		return "–"
	}
	return format(median(values), 2)
}

const (
	beginMarker = "<!-- bench:begin (generated by the bench; edit outside the markers) -->"
	endMarker   = "<!-- bench:end -->"
)

// markdown returns docs/benchmarks.md: the generated section replaces the one between
// the markers of an existing file, keeping what was written around it.
func (s *summary) markdown(opts options) string {
	var b strings.Builder
	b.WriteString(beginMarker + "\n\n")
	fmt.Fprintf(&b, "Generated %s by `make bench` (%s); the run took %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		fmt.Sprintf("`cd bench && go run . -m %d -repeats %d -docs ../docs/benchmarks.md -chart ../docs/benchmarks.png`", opts.m, opts.repeats),
		s.duration.Round(time.Second))
	b.WriteString("### Machine and versions\n\n")
	fmt.Fprintf(&b, "- %d CPUs (%s), %s memory, Linux %s\n", s.info.cpus, s.info.cpuModel, s.info.memory, s.info.kernel)
	names := make([]string, 0, len(s.info.versions))
	for name := range s.info.versions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "- %s %s\n", name, s.info.versions[name])
	}
	fmt.Fprintf(&b, "- M = %d messages per run, concurrency %d for every contender, %d repeats (medians; range = min–max)\n\n", s.m, opts.concurrency, s.repeats)
	for _, note := range s.notes {
		fmt.Fprintf(&b, "- **Note:** %s\n", note)
	}
	b.WriteString("### Results\n\n")
	b.WriteString("| contender | handler | msg/s (median) | range | SQS calls/msg | DynamoDB writes/new msg | DynamoDB writes/duplicate |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, st := range s.stats {
		mode := "no-op"
		if st.mode == "slow" {
			mode = "10–200 ms"
		}
		failed := ""
		if st.failed > 0 {
			failed = fmt.Sprintf(" (%d of %d runs failed)", st.failed, st.runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s%s | %s | %s | %s | %s |\n", st.contender.label, mode, format(median(st.perSecond), 0), failed,
			spread(st.perSecond), format(median(st.callsPerMsg), 3), optional(st.writesPerNew), optional(st.writesPerDup))
	}
	b.WriteString("\nAPI calls per message by operation (median-throughput run):\n\n")
	for _, st := range s.stats {
		if st.median.sqsCalls != nil {
			fmt.Fprintf(&b, "- %s, %s: %s\n", st.contender.label, st.mode, breakdown(st.median.sqsCalls, s.m))
		}
	}
	for _, st := range s.stats {
		if st.median.ddbCalls != nil && st.contender.idempotent {
			fmt.Fprintf(&b, "- DynamoDB, %s, %s, new keys: %s\n", st.contender.label, st.mode, breakdown(st.median.ddbCalls, s.m))
			if st.median.dupDDBCalls != nil {
				fmt.Fprintf(&b, "- DynamoDB, %s, %s, duplicates of completed keys: %s\n", st.contender.label, st.mode, breakdown(st.median.dupDDBCalls, s.m))
			}
		}
	}
	b.WriteString("\nRatios (median of the per-repeat ratios; contenders of one repeat ran back to back):\n\n")
	ratioNames := make([]string, 0, len(s.ratios))
	for name := range s.ratios {
		ratioNames = append(ratioNames, name)
	}
	slices.Sort(ratioNames)
	for _, name := range ratioNames {
		fmt.Fprintf(&b, "- %s = %s\n", name, format(median(s.ratios[name]), 2))
	}
	fmt.Fprintf(&b, "\n```\n%s\n```\n\n![Throughput by contender](benchmarks.png)\n\n%s\n", s.line(), endMarker)
	generated := b.String()

	existing, err := os.ReadFile(opts.docs)
	if err == nil {
		text := string(existing)
		begin, end := strings.Index(text, beginMarker), strings.Index(text, endMarker)
		if begin >= 0 && end > begin {
			rest := strings.TrimPrefix(text[end+len(endMarker):], "\n")
			return text[:begin] + generated + rest
		}
	}
	return "# Benchmarks\n\n" + generated
}

// writeChart renders median throughput per contender: no-op handler on the left,
// 10-200 ms handler on the right (each with its own scale), values on the bars.
func (s *summary) writeChart(path string) error {
	modes := []struct{ mode, title string }{{"noop", "no-op handler"}, {"slow", "10–200 ms handler"}}
	plots := make([][]*plot.Plot, 1)
	for _, m := range modes {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: msg/s, concurrency 20, M = %d, median of %d", m.title, s.m, s.repeats)
		p.Y.Label.Text = "messages per second"
		var labels []string
		var values plotter.Values
		for _, st := range s.stats {
			if st.mode != m.mode {
				continue
			}
			labels = append(labels, strings.ReplaceAll(st.contender.label, " (", "\n("))
			values = append(values, zeroIfNaN(median(st.perSecond)))
		}
		if len(values) == 0 {
			continue
		}
		bars, err := plotter.NewBarChart(values, vg.Points(28))
		if err != nil {
			return err
		}
		bars.Color = colorOf(0x4c, 0x9a, 0xd8)
		if m.mode == "noop" {
			bars.Color = colorOf(0x44, 0x44, 0x44)
		}
		points := make(plotter.XYs, len(values))
		texts := make([]string, len(values))
		for i, v := range values {
			points[i] = plotter.XY{X: float64(i), Y: v}
			texts[i] = fmt.Sprintf("%.0f", v)
		}
		labelsOnBars, err := plotter.NewLabels(plotter.XYLabels{XYs: points, Labels: texts})
		if err != nil {
			return err
		}
		for i := range labelsOnBars.TextStyle {
			labelsOnBars.TextStyle[i].XAlign = -0.5
			labelsOnBars.TextStyle[i].YAlign = 0
		}
		p.Add(bars, labelsOnBars)
		p.NominalX(labels...)
		p.Y.Min = 0
		p.Y.Max = slices.Max(values) * 1.15
		plots[0] = append(plots[0], p)
	}
	if len(plots[0]) == 0 {
		return fmt.Errorf("no results to chart")
	}
	width, height := vg.Length(len(plots[0]))*7*vg.Inch, 4.5*vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i, p := range plots[0] {
		p.Draw(canvases[0][i])
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func zeroIfNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func colorOf(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }
