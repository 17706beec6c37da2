package serve

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// findBrowser returns a Chromium or Chrome binary, or "" (the test then
// skips; scripts/install-browser.sh installs Debian's chromium).
func findBrowser() string {
	if p := os.Getenv("QP_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestSearchPage drives the search page in a headless Chromium through
// the DevTools protocol (chromedp): type a query, pick OR and k, submit,
// and read the results, which must be the engine's (ids, scores to 4
// places, stored text), with the time taken. QP_SCREENSHOT=FILE.png keeps
// a screenshot of the page.
func TestSearchPage(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skip("no Chromium or Chrome found (install: scripts/install-browser.sh; or set QP_BROWSER)")
	}
	e := testEngine(t)
	_, hs := newTestServer(t, e, Config{})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("headless", true), chromedp.WindowSize(1000, 700))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser (no timeout: it would stop it)
		t.Fatalf("starting %s: %v", browser, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(hs.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SendKeys(chromedp.CSS("#q"), "parallel query processing"),
		chromedp.SetValue(chromedp.CSS("#mode"), "or"),
		chromedp.SetValue(chromedp.CSS("#k"), "5"),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#results li")),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	status := must(chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status"))))(t)
	list := func(sel string) []string {
		return must(chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("`+sel+`")].map(e => e.textContent)`)))(t)
	}
	ids, scores, texts := list("#results li .id"), list("#results li .score"), list("#results li .text")
	png := must(chromedp.Run(ctx, chromedp.FullScreenshot(100)))(t)
	if p := os.Getenv("QP_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want SearchResponse
	post(t, hs.URL+"/v1/search", `{"q":"parallel query processing","mode":"or","k":5,"stored":true}`, &want)
	if len(ids) != len(want.Hits) || len(scores) != len(ids) || len(texts) != len(ids) || len(ids) == 0 {
		t.Fatalf("page shows %d ids, %d scores, %d texts; the API answers %d hits", len(ids), len(scores), len(texts), len(want.Hits))
	}
	for i, h := range want.Hits {
		if ids[i] != h.ID || scores[i] != strconv.FormatFloat(float64(h.Score), 'f', 4, 64) {
			t.Errorf("row %d: page %s %s, API %s %v", i, ids[i], scores[i], h.ID, h.Score)
		}
		if !strings.Contains(string(h.Stored), texts[i]) {
			t.Errorf("row %d: text %q not the stored title %s", i, texts[i], h.Stored)
		}
	}
	if !strings.Contains(status, "results in") || !strings.Contains(status, " ms") || !strings.Contains(status, "processor cpu") {
		t.Errorf("status line %q: want the count, the time taken and the processor", status)
	}
	// An error is shown as such.
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#q"), "the of"),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#status.error")),
	)
	errText, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status")))
	if err != nil || !strings.Contains(errText, "no_terms") {
		t.Errorf("error display: %q, %v", errText, err)
	}
}

// must returns v, failing the test on err.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		return v
	}
}
