package jobs_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/jobs"
)

type exportJob struct{ Tenant string }

func export(ctx context.Context, tenant string, page int) (string, bool) { return "", true }

// A worker that records its jobs, reports progress, stores a result and stops when a job
// is cancelled.
func ExampleStore_Middleware() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	records, err := jobs.NewStore(dynamodb.NewFromConfig(cfg), jobs.Config{Table: "sqsworker"})
	if err != nil {
		log.Fatal(err)
	}
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "export", func(ctx context.Context, job exportJob) error {
		for page := 1; ; page++ {
			if err := ctx.Err(); err != nil {
				return err // cancelled (jobs cancel ID) or shutting down
			}
			file, last := export(ctx, job.Tenant, page)
			_ = jobs.Progress(ctx, map[string]int{"pages": page}) // at most one write per 5 s
			if last {
				return jobs.SetResult(ctx, map[string]string{"file": file})
			}
		}
	})
	handler := sqsworker.Chain(mux, records.Middleware(jobs.MiddlewareConfig{}))
	_ = handler // run it on a poller or in a Lambda function
}

// Look a job up by its id and cancel it.
func ExampleStore_Cancel() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	records, err := jobs.NewStore(dynamodb.NewFromConfig(cfg), jobs.Config{Table: "sqsworker"})
	if err != nil {
		log.Fatal(err)
	}
	id := "01KBQ2ZP5E8Y9V0D2X4M6N8R1T" // Prepared.JobID(), Message.JobID()
	record, err := records.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(record.State, record.Attempts, string(record.Progress))
	if _, err := records.Cancel(ctx, id); err != nil {
		log.Print(err) // a *jobs.FinishedError when it has finished
	}
}

type reportJob struct{ Month string }

func report(ctx context.Context, month string) []map[string]any { return nil }

// Results over 256 KiB (up to 16 MiB) kept in S3: the record holds their reference, and
// Store.Result reads them back.
func ExampleLargeResults() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	records, err := jobs.NewStore(dynamodb.NewFromConfig(cfg), jobs.Config{
		Table: "sqsworker",
		LargeResults: &jobs.LargeResults{
			Client:   s3.NewFromConfig(cfg),
			Location: claimcheck.Location{Bucket: "acme-jobs", KeyPrefix: "job-results/"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := sqsworker.NewServeMux()
	jobs.RegisterJSON(mux, "report", func(ctx context.Context, job reportJob) ([]map[string]any, error) {
		// 600 KB of JSON: one PutObject to job-results/<job id>/<sha256>, the record keeps the reference
		return report(ctx, job.Month), nil
	})
	handler := sqsworker.Chain(mux, records.Middleware(jobs.MiddlewareConfig{}))

	// Elsewhere: the whole document, one GetObject, read only inside the location.
	result, err := records.Result(ctx, "01KBQ2ZP5E8Y9V0D2X4M6N8R1T")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(result))
	_ = handler // run it on a poller or in a Lambda function
}
