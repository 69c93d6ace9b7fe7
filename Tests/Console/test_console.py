"""The web console in a real browser: sign-in, the iiideas page, settings forms, runs (live),
the store, the graph (live) and the dead letters. Each test asserts on what the page shows and
saves a screenshot of each page it visits under CONSOLE_TEST_OUTPUT."""

from __future__ import annotations

import json
import shutil
import tempfile
import unittest
import urllib.error
import urllib.request
from pathlib import Path

from harness import REPOSITORY, Router, browser, screenshot

TOKEN = "console-test-token-7f3a"
SECRET = "key-from-the-environment-91c2"
EXPECT_MS = 10_000


def routes(data: Path) -> str:
    """A graph of the core and testkit plugins only: a clock, a file of what the actions wrote,
    an action that refuses to enable, a template in the store, an at-least-once route whose sink
    is down while `down.flag` exists."""
    return f"""\
spool: {{ path: "{data}/state.db" }}
instances:
  clock:   {{ plugin: core, timer: {{ interval: 150ms }} }}
  out:     {{ plugin: core, file: {{ path: "{data}/out.jsonl" }} }}
  display: {{ plugin: testkit, collect: {{ path: "{data}/display.txt" }} }}
  parcels: {{ plugin: testkit, numbers: {{ count: 1, prefix: parcel, subjects: 1, state: "{data}/parcels.state" }} }}
  depot:   {{ plugin: testkit, collect: {{ path: "{data}/depot.txt", fail_while: "{data}/down.flag" }} }}
routes:
  - name: deliveries
    from: parcels.numbers
    to: depot.collect
    delivery: at-least-once
    retry: {{ attempts: 2, backoff: 10ms, max_backoff: 20ms }}
iiideas:
  - id: tick-note
    title: Note every tick
    trigger: {{ port: clock.tick }}
    service: {{ piece: template, preferences: {{ text: "tick {{{{body.count}}}}" }} }}
    action:  {{ port: out.write }}
  - id: witness
    title: Witness of the clock
    trigger: {{ port: clock.tick }}
    service: {{ piece: pass }}
    action:  {{ port: out.write }}
  - id: with-a-secret
    title: Notes with a key from the environment
    trigger: {{ port: clock.tick, when: "body.count < 0" }}
    service: {{ piece: pass }}
    action:  {{ port: out.write, preferences: {{ key: "${{CONSOLE_SECRET}}" }} }}
  - id: show-on-display
    title: Show ticks on the display
    trigger: {{ port: clock.tick }}
    service: {{ piece: pass }}
    action:  {{ port: display.collect, preferences: {{ refuse: "the display is not paired" }} }}
iiidea_templates:
  - id: slow-note
    title: A slow note
    description: Writes the tick to the notes file after a pause
    tags: [notes, demo]
    trigger: {{ port: clock.tick }}
    service: {{ piece: delay, preferences: {{ duration: 20ms }} }}
    action:  {{ port: out.write }}
"""


class ConsoleTests(unittest.TestCase):
    plugins: Path

    @classmethod
    def setUpClass(cls) -> None:
        # The first-party plugins and the test kit, side by side (the testkit is never installed).
        cls.plugins = Path(tempfile.mkdtemp(prefix="switchyard-console-plugins-"))
        for name in ("libcore.so",):
            shutil.copy(REPOSITORY / "Plugins" / name, cls.plugins / name)
        shutil.copy(REPOSITORY / ".build/debug/libtestkit.so", cls.plugins / "libtestkit.so")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.plugins, ignore_errors=True)

    def setUp(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="switchyard-console-data-"))
        self.addCleanup(shutil.rmtree, self.data, True)
        (self.data / "down.flag").write_text("the depot is down\n")
        self.router = Router(routes(self.data), plugins=self.plugins, environment={"SWITCHYARD_ADMIN_TOKEN": TOKEN, "CONSOLE_SECRET": SECRET})
        self.router.start()
        self.addCleanup(self.router.stop)

    # --- helpers ---

    def api(self, path: str, method: str = "GET") -> object:
        request = urllib.request.Request(self.router.base_url + path, method=method, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.load(answer)

    def runs(self, iiidea: str) -> list[dict]:
        return self.api(f"/v1/iiideas/{iiidea}/runs?limit=1000")  # type: ignore[return-value]

    def wait_for(self, what: str, condition, timeout: float = 10.0) -> None:
        """Awaits `condition` (checked as the router's log grows, at most `timeout` seconds)."""
        import time

        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.fail(f"timed out waiting for {what}\n{self.router.log()[-4000:]}")
            self.router.wait_for_output(0.2)

    def sign_in(self, page) -> None:
        page.goto(self.router.base_url + "/console")
        self.assertIn("/console/login", page.url)
        page.get_by_label("Admin token").fill(TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/iiideas")

    def card(self, page, iiidea: str):
        return page.locator(f'li[data-iiidea="{iiidea}"]')

    # --- tests ---

    def test_sign_in_with_the_token_and_see_every_iiidea_with_its_state(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            violations: list[str] = []
            page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None)
            response = page.goto(self.router.base_url + "/console/iiideas")
            self.assertIn("/console/login", page.url, "without a session the console sends the browser to sign in")
            screenshot(page, "login")
            page.get_by_label("Admin token").fill("not-the-token")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("alert")).to_contain_text("not this router's")
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/console/iiideas")
            response = page.reload()
            self.assertIn("script-src 'self'", response.headers["content-security-policy"])
            cookie = next(c for c in page.context.cookies() if c["name"] == "switchyard_session")
            self.assertTrue(cookie["httpOnly"])
            self.assertEqual(cookie["sameSite"], "Strict")
            card = self.card(page, "tick-note")
            expect(card.locator("h2")).to_have_text("Note every tick")
            expect(card.locator(".chain")).to_contain_text("clock.tick")
            expect(card.locator(".chain")).to_contain_text("template")
            expect(card.locator(".chain")).to_contain_text("out.write")
            expect(card.locator("[data-state]")).to_have_text("enabled")
            refused = self.card(page, "show-on-display")
            expect(refused.locator("[data-state]")).to_have_text("inactive")
            expect(refused.locator("[data-reason]")).to_contain_text("the display is not paired")
            self.wait_for("a run of tick-note", lambda: len(self.runs("tick-note")) >= 2)

            # A tick every 150 ms: the newest run may be one that has only just started, so the
            # page is loaded again until its last run is a finished one.
            def shows_a_finished_run() -> bool:
                page.reload()
                return "succeeded" in card.locator(".runs-line").inner_text()

            self.wait_for("the card to show a finished last run", shows_a_finished_run)
            expect(card.locator(".runs-line")).to_contain_text("succeeded")
            self.assertGreaterEqual(int(card.locator("[data-runs-hour]").inner_text()), 1)
            screenshot(page, "iiideas")
            # The API still wants the bearer token: a session is for the console only.
            with self.assertRaises(urllib.error.HTTPError) as refused_api:
                urllib.request.urlopen(self.router.base_url + "/v1/iiideas", timeout=5)
            self.assertEqual(refused_api.exception.code, 401)
            self.assertEqual(violations, [])

    def test_disabling_an_iiidea_stops_its_runs(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            self.wait_for("tick-note running", lambda: len(self.runs("tick-note")) >= 1)
            card = self.card(page, "tick-note")
            card.get_by_role("button", name="Disable tick-note").click()
            expect(page.get_by_role("status")).to_have_text("Disabled tick-note.")
            expect(card.locator("[data-state]")).to_have_text("disabled")
            screenshot(page, "iiideas-disabled")
            stopped_at = len(self.runs("tick-note"))
            witnessed = len(self.runs("witness"))
            # The same clock keeps the witness running: three more of its runs, none of tick-note's.
            self.wait_for("three more witness runs", lambda: len(self.runs("witness")) >= witnessed + 3)
            self.assertEqual(len(self.runs("tick-note")), stopped_at)
            card.get_by_role("button", name="Enable tick-note").click()
            expect(card.locator("[data-state]")).to_have_text("enabled")
            self.wait_for("tick-note running again", lambda: len(self.runs("tick-note")) > stopped_at)

    def test_a_changed_preference_is_used_by_the_next_run_and_shows_live(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            page.goto(self.router.base_url + "/console/iiideas/tick-note/runs")
            expect(page.locator("[data-live-state]")).to_have_text("Live", timeout=EXPECT_MS)
            runs_page = page
            # A second tab of the same session changes the preference.
            settings = page.context.new_page()
            settings.goto(self.router.base_url + "/console/iiideas/tick-note")
            field = settings.get_by_label("text")
            expect(field).to_have_value("tick {{body.count}}")
            screenshot(settings, "settings")
            field.fill("tock {{body.count}}")
            settings.get_by_role("button", name="Save and apply").click()
            expect(settings.get_by_role("status")).to_contain_text("new preferences")
            expect(settings.get_by_label("text")).to_have_value("tock {{body.count}}")
            # The runs page was not reloaded: the new run's row arrives over server-sent events.
            expect(runs_page.locator("#runs tr").first).to_contain_text('"tock ', timeout=EXPECT_MS)
            screenshot(runs_page, "runs-live")
            written = [json.loads(line) for line in (self.data / "out.jsonl").read_text().splitlines()]
            self.assertTrue(any(str(entry["body"].get("text", "")).startswith("tock ") for entry in written))
            # Kept in the store: a restart still runs with it.
            self.router.stop()
            self.router = Router(routes(self.data), plugins=self.plugins, environment={"SWITCHYARD_ADMIN_TOKEN": TOKEN, "CONSOLE_SECRET": SECRET})
            self.router.start()
            self.addCleanup(self.router.stop)
            before = len((self.data / "out.jsonl").read_text().splitlines())
            self.wait_for(
                "a tock after the restart",
                lambda: any(
                    json.loads(line)["body"].get("text", "").startswith("tock ")
                    for line in (self.data / "out.jsonl").read_text().splitlines()[before:]
                ),
            )

    def test_a_preference_that_breaks_the_schema_is_refused_at_its_field(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            page.goto(self.router.base_url + "/console/store/slow-note")
            page.get_by_label("duration").fill("soon")
            page.get_by_role("button", name="Obtain").click()
            expect(page.get_by_role("alert").first).to_contain_text("service.duration must match")
            expect(page.locator(".field-error")).to_contain_text("duration: must match")
            self.assertEqual(page.get_by_label("duration").get_attribute("aria-invalid"), "true")
            screenshot(page, "store-invalid")
            self.assertNotIn("slow-note", [entry["id"] for entry in self.api("/v1/iiideas")])  # type: ignore[union-attr]

    def test_obtain_from_the_store_runs_at_once_and_delete_removes_it(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            page.get_by_role("link", name="Store").click()
            page.get_by_label("Search the templates").fill("notes pause")
            page.get_by_role("button", name="Search").click()
            expect(page.locator("li[data-template]")).to_have_count(1)
            screenshot(page, "store")
            page.get_by_role("link", name="Obtain slow-note").click()
            page.get_by_label("Id").fill("my-slow-note")
            page.get_by_label("duration").fill("5ms")
            screenshot(page, "store-obtain")
            page.get_by_role("button", name="Obtain").click()
            expect(page.get_by_role("status")).to_have_text("Obtained my-slow-note; it runs now.")
            expect(self.card(page, "my-slow-note").locator(".meta")).to_contain_text("from the store")
            self.wait_for("a run of the obtained iiidea", lambda: len(self.runs("my-slow-note")) >= 1)
            page.once("dialog", lambda dialog: dialog.accept())
            self.card(page, "my-slow-note").get_by_role("button", name="Delete my-slow-note").click()
            expect(page.get_by_role("status")).to_have_text("Deleted my-slow-note.")
            expect(self.card(page, "my-slow-note")).to_have_count(0)

    def test_run_now_with_a_sample_input(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            self.card(page, "witness").get_by_role("link", name="Settings of witness").click()
            page.get_by_label("Sample input").fill('{"count": "many"}')
            page.get_by_role("button", name="Run now").click()
            expect(page.get_by_role("alert")).to_contain_text("the sample input is not a core.Tick")
            page.get_by_label("Sample input").fill('{"count": 4242, "time": "2026-11-25T00:00:00Z"}')
            page.get_by_role("button", name="Run now").click()
            page.wait_for_url("**/console/iiideas/witness/runs?done=started")
            expect(page.locator("#runs")).to_contain_text('"count" : 4242', timeout=EXPECT_MS)

    def test_a_run_that_ends_before_the_live_view_connects_still_reaches_it(self) -> None:
        """The gap between a runs page's render and its event stream's start: a run that starts
        and ends inside it is replayed from the page's `since`, and after a reconnect from the
        browser's `Last-Event-ID`."""
        import http.client
        import time

        with browser() as page:
            self.sign_in(page)
            since = time.time_ns()
            body = json.dumps({"input": {"count": 4343, "time": "2026-11-25T00:00:00Z"}}).encode()
            request = urllib.request.Request(
                self.router.base_url + "/v1/iiideas/witness/run", data=body, method="POST",
                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=5) as answer:
                trigger = json.load(answer)["trigger_envelope_id"]
            self.wait_for(
                "the sample run to end",
                lambda: any(r["trigger_envelope_id"] == trigger and r["outcome"] == "succeeded" for r in self.runs("witness")))
            # Only now does a live view connect, as a page rendered at `since` would.
            replayed = page.evaluate(
                """([source, timeout]) => new Promise((resolve) => {
                    const events = new EventSource(source);
                    setTimeout(() => { events.close(); resolve(null); }, timeout);
                    events.addEventListener("run", (message) => {
                        if (!message.data.includes("4343")) return;
                        events.close();
                        resolve({ id: message.lastEventId, data: message.data });
                    });
                })""",
                [f"/console/events/runs?iiidea=witness&since={since}", EXPECT_MS])
            self.assertIsNotNone(replayed, "the live view never showed the run that ended before it connected")
            self.assertIn("succeeded", json.loads(replayed["data"])["html"])
            self.assertGreaterEqual(int(replayed["id"]), since)
            # A reconnecting EventSource sends the last id it had; the stream replays from there.
            cookie = next(c for c in page.context.cookies() if c["name"] == "switchyard_session")
            host, port = self.router.base_url.removeprefix("http://").split(":")
            connection = http.client.HTTPConnection(host, int(port), timeout=EXPECT_MS / 1000)
            self.addCleanup(connection.close)
            connection.request(
                "GET", "/console/events/runs?iiidea=witness",
                headers={"Cookie": f"switchyard_session={cookie['value']}", "Last-Event-ID": str(since)})
            stream = connection.getresponse()
            self.assertEqual(stream.status, 200)
            deadline = time.monotonic() + EXPECT_MS / 1000
            while b"4343" not in (line := stream.readline()):
                self.assertTrue(line and time.monotonic() < deadline, "the stream did not replay the sample run")

    def test_the_graph_counts_live_and_a_dead_letter_replays(self) -> None:
        from playwright.sync_api import expect

        self.wait_for("the parcel dead-lettered", lambda: len(self.api("/v1/dead-letters")) == 1)  # type: ignore[arg-type]
        with browser() as page:
            self.sign_in(page)
            page.get_by_role("link", name="Graph").click()
            expect(page.locator('tr[data-instance="clock"] [data-ready]')).to_have_text("ready")
            cell = page.locator('tr[data-route="iiidea witness"] [data-counter="received"]')
            first = int(cell.inner_text())
            # Counted without a reload: the cell changes over server-sent events.
            page.wait_for_function(
                f"() => Number(document.querySelector('tr[data-route=\"iiidea witness\"] [data-counter=\"received\"]').textContent) > {first}",
                timeout=EXPECT_MS,
            )
            letter = page.locator("tr[data-dead-letter]")
            expect(letter).to_have_count(1)
            expect(letter).to_contain_text("deliveries → depot.collect")
            screenshot(page, "graph")
            letter.get_by_role("link").click()
            expect(page.locator("pre.envelope")).to_contain_text("parcel-00000001")
            screenshot(page, "dead-letter")
            (self.data / "down.flag").unlink()
            page.get_by_role("button", name="Replay dead letter").click()
            expect(page.get_by_role("status")).to_contain_text("Replayed dead letter")
            self.wait_for("the parcel delivered", lambda: (self.data / "depot.txt").exists() and "parcel-00000001" in (self.data / "depot.txt").read_text())
            page.reload()
            expect(page.locator("[data-no-dead-letters]")).to_be_visible()

    def test_without_javascript_the_forms_still_work(self) -> None:
        from playwright.sync_api import expect

        with browser(javascript=False) as page:
            self.sign_in(page)
            self.card(page, "witness").get_by_role("button", name="Disable witness").click()
            expect(self.card(page, "witness").locator("[data-state]")).to_have_text("disabled")

    def test_values_from_the_environment_are_masked_and_not_editable(self) -> None:
        from playwright.sync_api import expect

        with browser() as page:
            self.sign_in(page)
            page.goto(self.router.base_url + "/console/iiideas/with-a-secret")
            expect(page.locator("main")).to_contain_text("use values from the environment")
            expect(page.locator("main")).to_contain_text('"key":"***"')
            self.assertNotIn(SECRET, page.content())
            screenshot(page, "settings-secret")
            page.get_by_role("button", name="Save and apply").click()
            expect(page.get_by_role("status")).to_contain_text("new preferences")
            self.assertNotIn(SECRET, page.content())
        # Saving did not copy the secret into the store (the route file's value still runs).
        detail = self.api("/v1/iiideas/with-a-secret")
        self.assertEqual(detail["preferences"]["action"], {"key": "***"})  # type: ignore[index]
        self.assertTrue(detail["locked"]["action"])  # type: ignore[index]
        self.assertNotIn(SECRET.encode(), (self.data / "state.db").read_bytes())

    def test_phone_width_keyboard_and_labels(self) -> None:
        with browser(viewport=(390, 844)) as page:
            self.sign_in(page)
            for path, name in (("/console/iiideas", "phone-iiideas"), ("/console/graph", "phone-graph"), ("/console/iiideas/tick-note", "phone-settings")):
                page.goto(self.router.base_url + path)
                overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
                self.assertLessEqual(overflow, 0, f"{path} scrolls sideways on a phone")
                unlabelled = page.evaluate(
                    """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a[href]')]
                        .filter(e => !((e.labels && e.labels.length) || e.getAttribute('aria-label') || e.textContent.trim()))
                        .map(e => e.outerHTML)"""
                )
                self.assertEqual(unlabelled, [], f"controls without a label on {path}")
                screenshot(page, name)
            # The keyboard reaches the first card's first button from the top of the page.
            page.goto(self.router.base_url + "/console/iiideas")
            target = "Disable tick-note"
            for _ in range(20):
                page.keyboard.press("Tab")
                if page.evaluate("() => document.activeElement && document.activeElement.getAttribute('aria-label')") == target:
                    break
            else:
                self.fail("Tab never reached the first iiidea's button")


if __name__ == "__main__":
    unittest.main()
