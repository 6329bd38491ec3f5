package client_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/server"
)

func TestSchedules(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	req := client.ScheduleRequest{Name: "daily", Cron: "0 7 * * *", Timezone: "Europe/Paris", Module: "wf", Workflow: "echo",
		Input: json.RawMessage(`{"feed":"x"}`), Catchup: "1h"}
	sc, err := c.CreateSchedule(ctx, req)
	if err != nil || sc.Name != "daily" || sc.Overlap != "skip" || sc.Catchup != "1h0m0s" || len(sc.Next) != 3 || sc.Paused || string(sc.Input) != `{"feed":"x"}` {
		t.Fatalf("CreateSchedule: %+v, %v", sc, err)
	}
	_, err = c.CreateSchedule(ctx, req)
	wantError(t, "CreateSchedule of a taken name", err, http.StatusConflict, client.CodeConflict, "")
	bad := req
	bad.Name, bad.Cron = "bad", "61 * * * *"
	_, err = c.CreateSchedule(ctx, bad)
	wantError(t, "CreateSchedule with a bad cron", err, http.StatusBadRequest, client.CodeBadRequest, "")
	bad.Cron, bad.Module = "0 7 * * *", "nope"
	_, err = c.CreateSchedule(ctx, bad)
	wantError(t, "CreateSchedule of an unknown module", err, http.StatusNotFound, client.CodeNotFound, "")

	if l, err := c.Schedules(ctx); err != nil || len(l) != 1 || l[0].Name != "daily" {
		t.Errorf("Schedules: %+v, %v", l, err)
	}
	if got, err := c.Schedule(ctx, "daily"); err != nil || got.Cron != "0 7 * * *" || got.Timezone != "Europe/Paris" {
		t.Errorf("Schedule: %+v, %v", got, err)
	}
	if p, err := c.PauseSchedule(ctx, "daily"); err != nil || !p.Paused || len(p.Next) != 0 {
		t.Errorf("PauseSchedule: %+v, %v; want paused, no next slot", p, err)
	}
	if r, err := c.ResumeSchedule(ctx, "daily"); err != nil || r.Paused || len(r.Next) != 3 {
		t.Errorf("ResumeSchedule: %+v, %v", r, err)
	}
	run, err := c.TriggerSchedule(ctx, "daily")
	if err != nil || !strings.HasPrefix(run.ID, "sched:daily@") || run.Workflow != "echo" {
		t.Fatalf("TriggerSchedule: %+v, %v", run, err)
	}
	if v, err := c.Wait(ctx, run.ID, client.WaitOptions{}); err != nil || string(v.Result) != `{"feed":"x"}` {
		t.Errorf("the triggered run: %s %s, %v", v.Status, v.Result, err)
	}
	if err := c.DeleteSchedule(ctx, "daily"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	for what, err := range map[string]error{
		"Schedule":       func() error { _, err := c.Schedule(ctx, "daily"); return err }(),
		"PauseSchedule":  func() error { _, err := c.PauseSchedule(ctx, "daily"); return err }(),
		"ResumeSchedule": func() error { _, err := c.ResumeSchedule(ctx, "daily"); return err }(),
		"TriggerSchedule": func() error {
			_, err := c.TriggerSchedule(ctx, "daily")
			return err
		}(),
		"DeleteSchedule": c.DeleteSchedule(ctx, "daily"),
	} {
		wantError(t, what+" of a deleted schedule", err, http.StatusNotFound, client.CodeNotFound, `no schedule "daily"`)
	}
}

func TestHooks(t *testing.T) {
	t.Setenv("SKEIN_HOOK_CLIENT_TEST", "s3cret")
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	h, err := c.CreateHook(ctx, client.HookRequest{Name: "open", Module: "wf", Workflow: "echo"})
	if err != nil || h.URL != "/v1/hooks/open" || h.Scheme != "" || h.Workflow != "echo" {
		t.Fatalf("CreateHook unsigned: %+v, %v", h, err)
	}
	signed, err := c.CreateHook(ctx, client.HookRequest{Name: "signed", Module: "wf", Workflow: "echo", SecretEnv: "SKEIN_HOOK_CLIENT_TEST"})
	if err != nil || signed.Scheme != "github" || signed.SecretEnv != "SKEIN_HOOK_CLIENT_TEST" {
		t.Fatalf("CreateHook signed: %+v, %v", signed, err)
	}
	_, err = c.CreateHook(ctx, client.HookRequest{Name: "open", Module: "wf", Workflow: "echo"})
	wantError(t, "CreateHook of a taken name", err, http.StatusConflict, client.CodeConflict, "")
	_, err = c.CreateHook(ctx, client.HookRequest{Name: "env", Module: "wf", Workflow: "echo", SecretEnv: "HOME"})
	wantError(t, "CreateHook with a variable not named SKEIN_HOOK_*", err, http.StatusBadRequest, client.CodeBadRequest, "")
	if l, err := c.Hooks(ctx); err != nil || len(l) != 2 || l[0].Name != "open" || l[1].Name != "signed" {
		t.Errorf("Hooks: %+v, %v", l, err)
	}
	if got, err := c.Hook(ctx, "signed"); err != nil || got.SecretEnv != "SKEIN_HOOK_CLIENT_TEST" {
		t.Errorf("Hook: %+v, %v", got, err)
	}

	body := []byte(`{"ref":"main"}`)
	hdr := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k1"}}
	run, created, err := c.Deliver(ctx, "open", body, hdr)
	if err != nil || !created || run.Workflow != "echo" {
		t.Fatalf("Deliver: %+v created %v, %v", run, created, err)
	}
	if again, created, err := c.Deliver(ctx, "open", body, hdr); err != nil || created || again.ID != run.ID {
		t.Errorf("Deliver again with the same Idempotency-Key: %+v created %v, %v; want run %s, not created", again, created, err, run.ID)
	}
	_, _, err = c.Deliver(ctx, "open", []byte(`{"ref":"other"}`), hdr)
	wantError(t, "Deliver of another body under the same Idempotency-Key", err, http.StatusConflict, client.CodeConflict, "")
	v, err := c.Wait(ctx, run.ID, client.WaitOptions{})
	var in struct {
		Hook    string              `json:"hook"`
		Headers map[string][]string `json:"headers"`
		JSON    map[string]string   `json:"json"`
	}
	if err != nil || json.Unmarshal(v.Result, &in) != nil || in.Hook != "open" || in.JSON["ref"] != "main" || in.Headers["Idempotency-Key"][0] != "k1" {
		t.Errorf("the delivery's run: %s %s, %v", v.Status, v.Result, err)
	}

	_, _, err = c.Deliver(ctx, "signed", body, http.Header{"X-Hub-Signature-256": {"sha256=00"}})
	wantError(t, "Deliver with a wrong signature", err, http.StatusUnauthorized, client.CodeUnauthorized, "")
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	if _, created, err := c.Deliver(ctx, "signed", body, http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}}); err != nil || !created {
		t.Errorf("Deliver signed: created %v, %v", created, err)
	}

	if err := c.DeleteHook(ctx, "open"); err != nil {
		t.Fatalf("DeleteHook: %v", err)
	}
	_, err = c.Hook(ctx, "open")
	wantError(t, "Hook of a deleted hook", err, http.StatusNotFound, client.CodeNotFound, `no hook "open"`)
	_, _, err = c.Deliver(ctx, "open", body, nil)
	wantError(t, "Deliver to a deleted hook", err, http.StatusNotFound, client.CodeNotFound, `no hook "open"`)
	wantError(t, "DeleteHook of a deleted hook", c.DeleteHook(ctx, "open"), http.StatusNotFound, client.CodeNotFound, `no hook "open"`)
}
