package opspage

import (
	"fmt"
	"html/template"
	"io/fs"
	"strconv"
	"time"

	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/redrive"
)

// parsePages parses each page template with the shared layout; jobLink is
// Config.JobLink.
func parsePages(jobLink func(string, redrive.DeadLetter) string) (map[string]*template.Template, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{"cells": cells, "ago": ago, "until": until, "ts": humantime.Timestamp, "short": humantime.Short, "task": taskText, "name": queueName, "age": age,
		"joblink": func(queue string, letter redrive.DeadLetter) string {
			if jobLink == nil {
				return ""
			}
			return jobLink(queue, letter)
		}}
	pages := map[string]*template.Template{}
	for _, name := range names {
		base := name[len("templates/"):]
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(files, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("opspage: template %s: %w", name, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// cells formats a queue's live values, by field name: the page renders them and
// static/refresh.js replaces them with the same fields of /api/queues, so both show
// exactly this text.
func cells(q QueueSnapshot) map[string]string {
	c := map[string]string{
		"visible": strconv.Itoa(q.Visible), "in_flight": strconv.Itoa(q.InFlight), "delayed": strconv.Itoa(q.Delayed),
		"dlq_depth": "-", "throughput": "-", "failure": "-", "move_task": "none", "error": q.Error,
	}
	if q.DLQ != nil {
		c["dlq_depth"] = strconv.Itoa(q.DLQ.Depth)
		c["dlq_visible"] = strconv.Itoa(q.DLQ.Visible)
		c["dlq_in_flight"] = strconv.Itoa(q.DLQ.InFlight)
		if len(q.DLQ.MoveTasks) > 0 {
			c["move_task"] = taskText(q.DLQ.MoveTasks[0])
		}
		if q.DLQ.Error != "" {
			c["error"] = q.DLQ.Error
		}
	}
	if r := q.Rates; r.Known {
		switch r.Source {
		case RatesFromMetrics:
			c["throughput"] = fmt.Sprintf("%.2f/s", r.PerSecond)
			c["failure"] = fmt.Sprintf("%.1f%%", r.Failure*100)
		default:
			c["throughput"] = fmt.Sprintf("≥ %.2f/s (net drain)", r.PerSecond)
			if q.DLQ != nil {
				c["failure"] = fmt.Sprintf("%.1f dead letters/min", r.Failure)
			}
		}
	}
	return c
}

// taskText is a move task's one-line progress.
func taskText(task redrive.MoveTask) string {
	text := fmt.Sprintf("%s: moved %d of %d", task.Status, task.Moved, task.ToMove)
	if task.FailureReason != "" {
		text += " (" + task.FailureReason + ")"
	}
	return text
}

func ago(t time.Time) string   { return humantime.Ago(t, time.Now()) }
func until(t time.Time) string { return humantime.Until(t, time.Now()) }

// age formats a duration such as an outbox's lag: to the second from 1 s on, to the
// millisecond below ("0s" for none).
func age(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return humantime.Short(d.Round(time.Second))
}
