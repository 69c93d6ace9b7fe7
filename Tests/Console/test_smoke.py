"""The browser-test chain end to end: a router with its admin port, Debian's Chromium driven by
Playwright, a screenshot. The console's own tests go next to this file."""

import unittest

from harness import Router, browser, screenshot

# A one-route graph of the core plugin only: no outside server.
ROUTES = """\
instances:
  clock:   { plugin: core, timer: { interval: 1s } }
  console: { plugin: core, console: { format: body } }
routes:
  - name: heartbeat
    from: clock.tick
    to: console.print
"""


class SmokeTests(unittest.TestCase):
    def test_healthz_in_the_browser(self) -> None:
        with Router(ROUTES) as router, browser() as page:
            response = page.goto(f"{router.base_url}/healthz")
            self.assertIsNotNone(response)
            self.assertEqual(response.status, 200, router.log())
            self.assertEqual(page.inner_text("body").strip(), "ok")
            self.assertTrue(screenshot(page, "smoke-healthz").stat().st_size > 0)
            self.assertIn("admin listening", router.log())


if __name__ == "__main__":
    unittest.main()
