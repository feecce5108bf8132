package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
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

func machineInfo(ctx context.Context, root, emulator string) info {
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
	if data, err := os.ReadFile(filepath.Join(root, "localstack", "requirements-moto.txt")); err == nil {
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
	if emulator == "elasticmq" {
		if data, err := os.ReadFile(filepath.Join(root, "localstack", "elasticmq", "pom.xml")); err == nil {
			var pom struct {
				Dependencies []struct {
					ArtifactID string `xml:"artifactId"`
					Version    string `xml:"version"`
				} `xml:"dependencies>dependency"`
			}
			_ = xml.Unmarshal(data, &pom)
			for _, dep := range pom.Dependencies {
				if strings.HasPrefix(dep.ArtifactID, "elasticmq-server") {
					i.versions["ElasticMQ (SQS)"] = dep.Version
				}
			}
		}
		return i
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
	seconds      []float64 // measured time of each run
	callsPerMsg  []float64
	cpuPer1k     []float64
	proxyPer1k   []float64 // this process's (the proxies') CPU per 1,000 messages
	emuPer1k     []float64 // the SQS emulator's CPU per 1,000 messages
	slotRatio    []float64 // 10-200 ms: msg/s over the slot bound
	writesPerNew []float64
	writesPerDup []float64
	median       result // the run with the median throughput, for the call breakdown
}

type summary struct {
	emulator string
	latency  time.Duration
	repeats  int
	stats    []*stat
	ratios   map[string][]float64 // per-repeat ratios for the summary line
	maxRates []int                // the concurrencies of the max-rate runs
	duration time.Duration
	info     info
	notes    []string
}

func summarize(opts options, contenders []contender, results []result) *summary {
	s := &summary{emulator: opts.emulator, latency: opts.latency, repeats: opts.repeats, ratios: map[string][]float64{}, maxRates: opts.maxConcurrency}
	index := map[string]*stat{}
	for _, mode := range opts.modes {
		for _, c := range contenders {
			if mode != "noop" && c.noopOnly {
				continue
			}
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
		total := float64(r.warmup + r.measured)
		st.perSecond = append(st.perSecond, r.perSecond())
		st.seconds = append(st.seconds, r.elapsed.Seconds())
		st.callsPerMsg = append(st.callsPerMsg, r.callsPerMsg())
		if cpu := r.cpuPer1k(); !math.IsNaN(cpu) {
			st.cpuPer1k = append(st.cpuPer1k, cpu)
		}
		if cpu := perThousand(r.proxyCPU, r.measured); !math.IsNaN(cpu) {
			st.proxyPer1k = append(st.proxyPer1k, cpu)
		}
		if cpu := perThousand(r.emulatorCPU, r.measured); !math.IsNaN(cpu) {
			st.emuPer1k = append(st.emuPer1k, cpu)
		}
		if r.slotBound > 0 {
			st.slotRatio = append(st.slotRatio, r.perSecond()/r.slotBound)
			if r.contender == "poller" {
				s.ratios["poller_vs_slot_bound_slow"] = append(s.ratios["poller_vs_slot_bound_slow"], r.perSecond()/r.slotBound)
			}
		}
		if st.contender.idempotent {
			st.writesPerNew = append(st.writesPerNew, float64(ddbWrites(r.ddbCalls))/total)
			if r.dupDDBCalls != nil {
				st.writesPerDup = append(st.writesPerDup, float64(ddbWrites(r.dupDDBCalls))/total)
			}
		}
		key := r.contender + "/" + r.mode
		if byRun[key] == nil {
			byRun[key] = map[int]float64{}
		}
		byRun[key][r.repeat] = r.perSecond()
	}
	for _, st := range s.stats {
		target := median(st.perSecond)
		for _, r := range results {
			if r.contender == st.contender.name && r.mode == st.mode && r.err == nil && r.perSecond() == target {
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
	for _, peer := range []string{"ceiling", "sqs_consumer", "spring", "lambda_esm"} {
		ratio("poller_vs_"+peer, "poller/noop", peer+"/noop")
		ratio("poller_vs_"+peer+"_slow", "poller/slow", peer+"/slow")
	}
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

// line is the one-line result: the emulator and latency, then
//
//   - poller_vs_ceiling, poller_vs_sqs_consumer, poller_vs_spring (no-op, ratios of msg/s);
//   - poller_vs_slot_bound_slow: the poller's msg/s with the 10-200 ms handler over the
//     slot bound (concurrency / mean handler time);
//   - sqs_calls_per_msg, sqs_calls_per_msg_slow: the poller's SQS calls per message;
//   - poller_vs_sqs_consumer_slow, poller_vs_spring_slow;
//   - ddb_writes_per_new, ddb_writes_per_dup: the idempotency contender's DynamoDB writes;
//   - max_rate_cN and cpu_ms_per_1k_cN: the poller's msg/s and CPU milliseconds per
//     1,000 messages at concurrency N (the max-rate runs).
func (s *summary) line() string {
	metric := func(values []float64) string { return format(median(values), 2) }
	callsPerMsg, callsPerMsgSlow, writesNew, writesDup := "n/a", "n/a", "n/a", "n/a"
	if st := s.find("poller", "noop"); st != nil {
		callsPerMsg = format(median(st.callsPerMsg), 3)
	}
	if st := s.find("poller", "slow"); st != nil {
		callsPerMsgSlow = format(median(st.callsPerMsg), 3)
	}
	if st := s.find("poller_idempotency", "noop"); st != nil {
		writesNew, writesDup = metric(st.writesPerNew), metric(st.writesPerDup)
	}
	line := fmt.Sprintf("bench: emulator=%s latency=%s poller_vs_ceiling=%s poller_vs_sqs_consumer=%s poller_vs_spring=%s poller_vs_slot_bound_slow=%s sqs_calls_per_msg=%s sqs_calls_per_msg_slow=%s poller_vs_sqs_consumer_slow=%s poller_vs_spring_slow=%s ddb_writes_per_new=%s ddb_writes_per_dup=%s",
		s.emulator, s.latency, metric(s.ratios["poller_vs_ceiling"]), metric(s.ratios["poller_vs_sqs_consumer"]), metric(s.ratios["poller_vs_spring"]),
		metric(s.ratios["poller_vs_slot_bound_slow"]), callsPerMsg, callsPerMsgSlow,
		metric(s.ratios["poller_vs_sqs_consumer_slow"]), metric(s.ratios["poller_vs_spring_slow"]), writesNew, writesDup)
	for _, n := range s.maxRates {
		rate, cpu := "n/a", "n/a"
		if st := s.find(maxRateName(n), "noop"); st != nil {
			rate, cpu = format(median(st.perSecond), 0), format(median(st.cpuPer1k), 0)
		}
		line += fmt.Sprintf(" max_rate_c%d=%s cpu_ms_per_1k_c%d=%s", n, rate, n, cpu)
	}
	return line
}

func spread(values []float64) string {
	if len(values) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f–%.0f", slices.Min(values), slices.Max(values))
}

func breakdown(counts map[string]int64, m int) string {
	if m <= 0 {
		return ""
	}
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
	fmt.Fprintf(&b, "%-32s %-5s %9s %13s %7s %13s %11s %11s %10s %10s\n", "contender", "mode", "msg/s", "range", "run s", "SQS calls/msg", "CPU ms/1k", "/slot bound", "DDB wr/new", "DDB wr/dup")
	for _, st := range s.stats {
		fmt.Fprintf(&b, "%-32s %-5s %9s %13s %7s %13s %11s %11s %10s %10s\n", st.contender.label, st.mode,
			format(median(st.perSecond), 0), spread(st.perSecond), shortest(st.seconds), format(median(st.callsPerMsg), 3),
			optional(st.cpuPer1k, 0), optional(st.slotRatio, 2), optional(st.writesPerNew, 2), optional(st.writesPerDup, 2))
	}
	return b.String()
}

// shortest is the shortest measured time of a contender's runs, in seconds.
func shortest(seconds []float64) string {
	if len(seconds) == 0 {
		return "n/a"
	}
	return format(slices.Min(seconds), 1)
}

func optional(values []float64, digits int) string {
	if len(values) == 0 {
		return "–"
	}
	return format(median(values), digits)
}

// The generated sections of docs/benchmarks.md, one per emulator and latency, are kept
// between these markers.
func beginMarker(key string) string {
	return "<!-- bench:begin " + key + " (generated by the bench; edit outside the markers) -->"
}

func endMarker(key string) string { return "<!-- bench:end " + key + " -->" }

// key names the section of this run's emulator and latency.
func (s *summary) key() string { return fmt.Sprintf("%s latency=%s", s.emulator, s.latency) }

// markdown returns docs/benchmarks.md: the generated section replaces the one of the
// same emulator and latency between its markers, keeping what was written around it, or
// is added at the end.
func (s *summary) markdown(opts options, chart string) string {
	var b strings.Builder
	b.WriteString(beginMarker(s.key()) + "\n\n")
	command := fmt.Sprintf("make bench BENCH_EMULATOR=%s BENCH_LATENCY=%s", s.emulator, s.latency)
	if s.emulator == "elasticmq" && s.latency == 10*time.Millisecond {
		command = "make bench-elasticmq"
	}
	fmt.Fprintf(&b, "### %s, %s per SQS call\n\n", map[string]string{"elasticmq": "ElasticMQ", "localstack": "LocalStack"}[s.emulator], latencyText(s.latency))
	fmt.Fprintf(&b, "Generated %s by `%s` (BENCH_REPEATS=%d, BENCH_DURATION=%s, BENCH_WARMUP=%s); the run took %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), command, opts.repeats, opts.duration, opts.warmup, s.duration.Round(time.Second))
	fmt.Fprintf(&b, "- %d CPUs (%s), %s memory, Linux %s\n", s.info.cpus, s.info.cpuModel, s.info.memory, s.info.kernel)
	names := make([]string, 0, len(s.info.versions))
	for name := range s.info.versions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "- %s %s\n", name, s.info.versions[name])
	}
	fmt.Fprintf(&b, "- concurrency %d for every contender, %d repeats (medians; range = min–max)\n", opts.concurrency, s.repeats)
	for _, note := range s.notes {
		fmt.Fprintf(&b, "- **Note:** %s\n", note)
	}
	b.WriteString("\n| contender | handler | msg/s (median) | range | shortest run (s) | SQS calls/msg | CPU ms per 1,000 msgs | proxy / emulator CPU ms per 1,000 | of the slot bound | DynamoDB writes/new msg | DynamoDB writes/duplicate |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, st := range s.stats {
		mode := "no-op"
		if st.mode == "slow" {
			mode = "10–200 ms"
		}
		failed := ""
		if st.failed > 0 {
			failed = fmt.Sprintf(" (%d of %d runs failed)", st.failed, st.runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s%s | %s | %s | %s | %s | %s / %s | %s | %s | %s |\n", st.contender.label, mode, format(median(st.perSecond), 0), failed,
			spread(st.perSecond), shortest(st.seconds), format(median(st.callsPerMsg), 3), optional(st.cpuPer1k, 0),
			optional(st.proxyPer1k, 0), optional(st.emuPer1k, 0), optional(st.slotRatio, 2),
			optional(st.writesPerNew, 2), optional(st.writesPerDup, 2))
	}
	b.WriteString("\nSQS calls per message by operation (median-throughput run, while the clock ran):\n\n")
	for _, st := range s.stats {
		if st.median.sqsCalls != nil {
			fmt.Fprintf(&b, "- %s, %s: %s\n", st.contender.label, st.mode, breakdown(st.median.sqsCalls, st.median.measured))
		}
	}
	for _, st := range s.stats {
		if st.median.ddbCalls != nil && st.contender.idempotent {
			total := st.median.warmup + st.median.measured
			fmt.Fprintf(&b, "- DynamoDB, %s, %s, new keys: %s\n", st.contender.label, st.mode, breakdown(st.median.ddbCalls, total))
			if st.median.dupDDBCalls != nil {
				fmt.Fprintf(&b, "- DynamoDB, %s, %s, duplicates of completed keys: %s\n", st.contender.label, st.mode, breakdown(st.median.dupDDBCalls, total))
			}
		}
	}
	fmt.Fprintf(&b, "\n```\n%s\n```\n\n", s.line())
	if chart != "" {
		fmt.Fprintf(&b, "![Throughput by contender](%s)\n\n", chart)
	}
	b.WriteString(endMarker(s.key()) + "\n")
	generated := b.String()

	existing, err := os.ReadFile(opts.docs)
	if err == nil {
		text := string(existing)
		begin, end := strings.Index(text, beginMarker(s.key())), strings.Index(text, endMarker(s.key()))
		if begin >= 0 && end > begin {
			rest := strings.TrimPrefix(text[end+len(endMarker(s.key())):], "\n")
			return text[:begin] + generated + rest
		}
		return strings.TrimRight(text, "\n") + "\n\n" + generated
	}
	return "# Benchmarks\n\n" + generated
}

func latencyText(d time.Duration) string {
	if d <= 0 {
		return "no added latency"
	}
	return fmt.Sprintf("%s (±25%%) added", d)
}

// writeChart renders median throughput per contender: no-op handler on the left,
// 10-200 ms handler on the right (each with its own scale), values on the bars.
func (s *summary) writeChart(path string) error {
	modes := []struct{ mode, title string }{{"noop", "no-op handler"}, {"slow", "10–200 ms handler"}}
	plots := make([][]*plot.Plot, 1)
	for _, m := range modes {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: msg/s, %s, %s, median of %d", m.title, s.emulator, latencyText(s.latency), s.repeats)
		p.Y.Label.Text = "messages per second"
		var labels []string
		var values plotter.Values
		for _, st := range s.stats {
			if st.mode != m.mode || st.contender.noopOnly {
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
