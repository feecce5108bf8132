package claimcheck

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// fakeS3 is an in-memory S3API for unit tests: objects by "bucket/key", and an error to
// return from the next calls of each operation.
type fakeS3 struct {
	mu        sync.Mutex
	objects   map[string][]byte
	putErr    error
	getErr    error
	deleteErr error
	puts      int
	gets      int
	deletes   []string
	// hideLength answers GetObject without Content-Length (as a chunked answer would).
	hideLength bool
	// read counts the payload bytes handed out by GetObject bodies.
	read atomic.Int64
}

// countingReader counts the bytes read through it into n.
type countingReader struct {
	reader io.Reader
	n      *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.reader.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func newFakeS3() *fakeS3 { return &fakeS3{objects: map[string][]byte{}} }

func (f *fakeS3) PutObject(_ context.Context, input *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if f.putErr != nil {
		return nil, f.putErr
	}
	data, err := io.ReadAll(input.Body)
	if err != nil {
		return nil, err
	}
	f.objects[aws.ToString(input.Bucket)+"/"+aws.ToString(input.Key)] = data
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeS3) GetObject(_ context.Context, input *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.getErr != nil {
		return nil, f.getErr
	}
	data, ok := f.objects[aws.ToString(input.Bucket)+"/"+aws.ToString(input.Key)]
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	output := &s3.GetObjectOutput{Body: io.NopCloser(countingReader{bytes.NewReader(data), &f.read})}
	if !f.hideLength {
		output.ContentLength = aws.Int64(int64(len(data)))
	}
	return output, nil
}

func (f *fakeS3) DeleteObject(_ context.Context, input *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(input.Bucket) + "/" + aws.ToString(input.Key)
	f.deletes = append(f.deletes, name)
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	delete(f.objects, name)
	return &s3.DeleteObjectOutput{}, nil
}

func (f *fakeS3) object(bucket, key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.objects[bucket+"/"+key]
	return data, ok
}
