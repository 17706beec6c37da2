// Package client is a Go client of qp serve's HTTP/JSON API (docs/API.md):
// one query (Search) or many (SearchBatch), with the server's errors as
// *APIError and retries of 429 and 503 answers after their Retry-After.
//
//	c, err := client.New("http://127.0.0.1:8080", nil)
//	res, err := c.Search(ctx, serve.SearchRequest{Q: "parallel sorting", Mode: "or", K: 10})
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/qpengine/qp/serve"
)

// Client talks to one qp server. It is safe for concurrent use.
type Client struct {
	base *url.URL
	hc   *http.Client
	// Retries is how many times a request answered 429 (queue full) or
	// 503 (overloaded, shutting down) is sent again, after the answer's
	// Retry-After (at most MaxRetryWait); default 3.
	Retries      int
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds an answer's body (default 256 MiB).
	MaxResponseBytes int64
}

// New returns a client of the server at baseURL (http or https, e.g.
// "http://127.0.0.1:8080"); hc nil uses http.DefaultClient.
func New(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: server URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q: want http://host:port or https://host:port", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, hc: hc, Retries: 3, MaxRetryWait: 5 * time.Second, MaxResponseBytes: 256 << 20}, nil
}

// APIError is an error answer of the server.
type APIError struct {
	Status     int    // HTTP status
	Code       string // the stable code (serve.Code*)
	Message    string
	RetryAfter time.Duration // from the Retry-After header, 0 if none
}

func (e *APIError) Error() string {
	return fmt.Sprintf("qp server: %d %s: %s", e.Status, e.Code, e.Message)
}

// Search runs one query.
func (c *Client) Search(ctx context.Context, req serve.SearchRequest) (*serve.SearchResponse, error) {
	var out serve.SearchResponse
	if err := c.post(ctx, "/v1/search", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SearchBatch runs queries in one request; answer i answers reqs[i], and a
// failed query has its Error set (the call itself fails only when the
// whole request does).
func (c *Client) SearchBatch(ctx context.Context, reqs []serve.SearchRequest) ([]serve.SearchResponse, error) {
	var out serve.BatchResponse
	if err := c.post(ctx, "/v1/search/batch", serve.BatchRequest{Queries: reqs}, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(reqs) {
		return nil, fmt.Errorf("qp server: %d answers to %d queries", len(out.Results), len(reqs))
	}
	return out.Results, nil
}

// post sends body as JSON to path and decodes the answer into out,
// retrying 429 and 503 answers.
func (c *Client) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	u := c.base.JoinPath(path).String()
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, u, data, out)
		var ae *APIError
		if !errors.As(err, &ae) || (ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusServiceUnavailable) ||
			attempt >= c.Retries {
			return err
		}
		wait := min(max(ae.RetryAfter, 50*time.Millisecond), c.MaxRetryWait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

func (c *Client) once(ctx context.Context, u string, data []byte, out any) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return fmt.Errorf("qp server: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("qp server: reading the answer: %w", err)
	}
	if int64(len(b)) > c.MaxResponseBytes {
		return fmt.Errorf("qp server: answer larger than %d bytes", c.MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		ae := &APIError{Status: resp.StatusCode}
		var eb serve.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
			ae.Code, ae.Message = eb.Error.Code, eb.Error.Message
		} else {
			ae.Code, ae.Message = "http_"+strconv.Itoa(resp.StatusCode), strings.TrimSpace(string(b))
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			ae.RetryAfter = time.Duration(s) * time.Second
		}
		return ae
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("qp server: answer is not the expected JSON: %w", err)
	}
	return nil
}
