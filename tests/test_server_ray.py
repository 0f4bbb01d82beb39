"""The Ray Serve application (optional group: LLAMA_PY_TEST_RAY=1, needs ray[serve]).

A local Ray cluster on 127.0.0.1 started by the test, two replicas on SmolLM2, 40 requests
through the openai client spread over both (the split is printed), one replica killed
mid-run: every request succeeds or gets a clean error, and requests after recovery succeed.
"""
from __future__ import annotations

import collections
import concurrent.futures
import os
import socket
import time

import pytest

from server_util import need_server_packages

pytestmark = pytest.mark.ray
if os.environ.get("LLAMA_PY_TEST_RAY") != "1":
    pytest.skip("the Ray Serve group runs with LLAMA_PY_TEST_RAY=1 (pip install 'ray[serve]')",
                allow_module_level=True)
need_server_packages()
ray = pytest.importorskip("ray", reason="the Ray Serve tests need ray[serve]")
serve = pytest.importorskip("ray.serve", reason="the Ray Serve tests need ray[serve]")
import httpx  # noqa: E402
import openai  # noqa: E402


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def ray_app(smollm2_path):
    port = _free_port()
    ray.init(num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        from llama_py.server.ray_app import build_app
        app = build_app({"model": str(smollm2_path), "name": "smollm2", "replicas": "2", "parallel": "2",
                         "n_ctx": "1024", "threads": "1"})
        serve.run(app, name="llama", route_prefix="/", blocking=False)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Ray Serve app did not come up"
            time.sleep(0.5)
        yield url
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()


def _replica_actors():
    from ray.util import list_named_actors
    return [a for a in list_named_actors(all_namespaces=True)
            if "LlamaReplica" in a["name"] and a.get("namespace") == "serve"]


def _one(client, i):
    try:
        r = client.completions.create(model="smollm2", prompt=f"Request {i}: the number after {i} is",
                                      max_tokens=8, temperature=0)
        return ("ok", r.system_fingerprint, r.usage.completion_tokens)
    except openai.APIStatusError as e:
        return ("error", e.status_code, str(e))
    except openai.APIConnectionError as e:
        return ("error", "connection", str(e))


def test_two_replicas_share_the_load_and_survive_a_kill(ray_app):
    client = openai.OpenAI(base_url=ray_app + "/v1", api_key="x", max_retries=0, timeout=120)
    # 40 requests from 8 clients
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        out = list(ex.map(lambda i: _one(client, i), range(40)))
    assert all(o[0] == "ok" for o in out), [o for o in out if o[0] != "ok"][:3]
    split = collections.Counter(o[1] for o in out)
    print(f"\nsplit of 40 requests over the replicas: {dict(split)}")
    assert len(split) == 2 and min(split.values()) >= 5, split

    # kill one replica while 24 requests run
    actors = _replica_actors()
    assert len(actors) == 2, actors
    victim = ray.get_actor(actors[0]["name"], namespace="serve")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(_one, client, 100 + i) for i in range(24)]
        time.sleep(0.5)
        ray.kill(victim, no_restart=True)
        mid = [f.result(timeout=300) for f in futs]
    for o in mid:  # succeeded, or a clean HTTP error (never a hang or a dropped connection)
        assert o[0] == "ok" or (o[0] == "error" and isinstance(o[1], int) and o[1] >= 500), o
    print(f"during the kill: {sum(o[0] == 'ok' for o in mid)} ok, {sum(o[0] != 'ok' for o in mid)} clean errors")

    # recovery: Serve replaces the replica; then every request succeeds
    deadline = time.monotonic() + 180
    while len(_replica_actors()) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    after = [_one(client, 200 + i) for i in range(8)]
    assert all(o[0] == "ok" for o in after), after
    stream = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=6, stream=True)
    assert "".join((c.choices[0].delta.content or "") for c in stream if c.choices)
