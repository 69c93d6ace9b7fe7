"""OAuth connections in the console: a person connects a provider from the Connections page in a
real browser (the provider is Tests/IntegrationTests/Support/oauth_provider.py, which checks PKCE),
comes back to the page connected, and the iiidea that waited for the connection becomes active."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

from harness import REPOSITORY, SETPRIV, Router, browser, screenshot

TOKEN = "console-oauth-token-41d9"
PROVIDER = REPOSITORY / "Tests/IntegrationTests/Support/oauth_provider.py"


class OAuthConsoleTests(unittest.TestCase):
    def setUp(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="switchyard-console-oauth-"))
        self.addCleanup(shutil.rmtree, self.data, True)
        self.plugins = self.data / "plugins"
        self.plugins.mkdir()
        shutil.copy(REPOSITORY / "Plugins" / "libcore.so", self.plugins / "libcore.so")
        os.chmod(self.plugins, 0o755)
        # The provider dies with this process (parent-death signal) and at the end of the test.
        port_file = self.data / "provider.port"
        provider = subprocess.Popen(
            [SETPRIV, "--pdeathsig", "KILL", "--", "python3", str(PROVIDER), str(port_file),
             "--client-id", "switchyard", "--client-secret", "console-provider-secret"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.addCleanup(provider.wait, 5)
        self.addCleanup(provider.kill)
        deadline = time.monotonic() + 10
        while not port_file.exists():
            self.assertLess(time.monotonic(), deadline, "the provider did not start")
            self.assertIsNone(provider.poll(), "the provider exited")
            time.sleep(0.02)
        self.provider = f"http://127.0.0.1:{port_file.read_text().split()[0]}"
        self.router = Router(
            f"""\
spool: {{ path: "{self.data}/state.db" }}
oauth:
  example:
    authorize_url: {self.provider}/authorize
    token_url: {self.provider}/token
    client_id: switchyard
    client_secret: "${{EXAMPLE_SECRET}}"
instances:
  in:  {{ plugin: core, console: {{}} }}
  out: {{ plugin: core, file: {{ path: "{self.data}/out.jsonl" }} }}
iiideas:
  - id: fetch
    title: Fetch the resource
    trigger: {{ port: in.lines }}
    service: {{ piece: http, preferences: {{ url: "{self.provider}/resource", allow_private: true, auth: {{ oauth: example }} }} }}
    action:  {{ port: out.write }}
""",
            plugins=self.plugins,
            environment={"SWITCHYARD_ADMIN_TOKEN": TOKEN, "EXAMPLE_SECRET": "console-provider-secret"},
        )
        self.router.start()
        self.addCleanup(self.router.stop)

    def api(self, path: str) -> dict:
        request = urllib.request.Request(self.router.base_url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.load(answer)

    def test_connecting_from_the_console_activates_the_waiting_iiidea(self) -> None:
        with browser() as page:
            page.goto(self.router.base_url + "/console")
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/console/iiideas")
            page.get_by_role("link", name="Connections").click()
            card = page.locator("[data-connection=example]")
            self.assertEqual(card.locator("[data-status]").inner_text(), "not connected")
            self.assertIn("Waiting for it: fetch", card.inner_text())
            screenshot(page, "connections-before")

            # Off to the provider (which approves at once) and back through the router's callback.
            card.get_by_role("button", name="Connect").click()
            page.wait_for_url("**/console/connections?connected=example")
            self.assertEqual(page.get_by_role("status").inner_text(), "Connected example.")
            card = page.locator("[data-connection=example]")
            self.assertEqual(card.locator("[data-status]").inner_text(), "connected")
            screenshot(page, "connections-after")

        # The iiidea that waited is asked again by itself.
        deadline = time.monotonic() + 10
        while not next(i for i in self.api("/v1/iiideas") if i["id"] == "fetch").get("active"):
            self.assertLess(time.monotonic(), deadline, self.router.log()[-3000:])
            self.router.wait_for_output(0.2)
        self.assertTrue(self.api("/v1/oauth")["connections"][0]["connected"])


if __name__ == "__main__":
    unittest.main()
