package opspage_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/opspage"
)

// The README's operations page, mounted under /ops/ in a service's own mux beside its
// other routes.
func Example_mount() {
	ctx := context.Background()
	sqsClient := sqs.New(sqs.Options{Region: "us-east-1"}) // nothing is called before Start
	serve := func() {
		page, err := opspage.New(sqsClient, opspage.Config{
			Addr:        "127.0.0.1:8080", // the address browsers use: the Host header must name it
			Prefix:      "/ops",
			Queues:      []string{"https://sqs.us-east-1.amazonaws.com/123456789012/jobs"},
			AccessToken: os.Getenv("OPS_TOKEN"), // at least 16 characters; open /ops/?token=... once
		})
		if err != nil {
			log.Fatal(err)
		}
		page.Start(ctx) // polls the queues every 5 s until Close
		defer page.Close()
		mux := http.NewServeMux()
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
		mux.Handle("/ops/", page) // or http.StripPrefix("/ops", page)
		server := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		log.Fatal(server.ListenAndServe())
	}
	_ = serve
	fmt.Println(opspage.DefaultInterval, opspage.DefaultHistory)
	// Output: 5s 1h0m0s
}
