"""perflab/profile.py's layer table and summary on real collapsed stacks from every app.

The fixtures (tests/unit/fixtures/profiles/, README there) are async-profiler's cpu profiles of
each of the project's apps and each TechEmpower app under the plaintext-json scenario, and of
Spring MVC under zipcodes' reads (its DB driver, pool and TLS at work), recorded on loopback by
tests/contract/profile_apps.py.
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from functools import cache
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from perflab import profile, rundir

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
OURS = ("quarkus", "spring-mvc", "spring-webflux")
THEIRS = ("tfb-quarkus", "tfb-spring", "tfb-spring-webflux")


def fixture(name: str) -> Path:
    return FIXTURES / f"{name}.collapsed.gz"


@cache
def stacks_of(name: str) -> tuple[profile.Stack, ...]:
    return tuple(profile.read_collapsed(fixture(name)))


@cache
def frames_of(name: str) -> frozenset[str]:
    return frozenset(frame for stack in stacks_of(name) for frame in stack.frames)


def plaintext_json(app: str) -> str:
    return f"{app}-plaintext-json-cpu"


def printed_layers(text: str) -> list[str]:
    """The layer lines of perflab profile summarize's output: after their header, to the blank line."""
    lines = text.splitlines()
    start = lines.index("share  samples  layer") + 1
    return lines[start: lines.index("", start)]


@pytest.mark.parametrize("app", OURS + THEIRS)
def test_every_apps_layer_shares_add_up_to_all_its_samples(app: str) -> None:
    stacks = stacks_of(plaintext_json(app))
    summary = profile.summarize(stacks, app)
    assert summary.samples == sum(stack.samples for stack in stacks) > 500
    assert [entry.layer for entry in summary.layers] == list(profile.LAYERS)
    assert sum(entry.samples for entry in summary.layers) == summary.samples
    assert math.isclose(sum(entry.share for entry in summary.layers), 1.0)
    # As printed: one decimal each, 100.0 in all.
    printed = printed_layers(profile.render(summary))
    assert len(printed) == sum(1 for entry in summary.layers if entry.samples)
    assert round(sum(float(line.split("%")[0]) for line in printed), 1) == 100.0


# Layers every app's plaintext-json profile shows: it serves HTTP, routes, writes JSON; its JVM compiles.
EVERY_APP = ("http_server", "routing", "json", "jit")


@pytest.mark.parametrize("app", OURS)
def test_our_apps_show_the_server_the_routing_json_and_their_metrics(app: str) -> None:
    summary = profile.summarize(stacks_of(plaintext_json(app)), app)
    for layer in (*EVERY_APP, "metrics", "logging"):
        assert summary.share_of(layer) > 0, (app, layer)
    # Our apps' request histograms and observations: 3-6% of their samples here.
    assert summary.share_of("metrics") > 0.02
    assert summary.share_of("http_server") == max(entry.share for entry in summary.layers)


@pytest.mark.parametrize("app", THEIRS)
def test_techempowers_apps_show_the_server_routing_and_json_and_next_to_no_metrics(app: str) -> None:
    summary = profile.summarize(stacks_of(plaintext_json(app)), app)
    for layer in EVERY_APP:
        assert summary.share_of(layer) > 0, (app, layer)
    assert summary.share_of("app") > 0  # their handlers, in their own packages
    # They record no per-request metrics (Spring WebFlux's built-in observation context aside).
    assert summary.share_of("metrics") < 0.005
    assert summary.share_of("db") == summary.share_of("tls") == 0  # plaintext-json touches no DB


def test_the_db_scenario_shows_the_driver_the_pool_and_tls() -> None:
    summary = profile.summarize(stacks_of("spring-mvc-zipcodes-cpu"), "spring-mvc zipcodes")
    assert summary.share_of("db") > 0.01
    assert summary.share_of("tls") > 0.01  # the app's DB connections are TLS (the lab's rule)


# Per layer, real frames (as async-profiler wrote them in the fixture named) and the layer the table
# gives each. Each frame is checked to be in its fixture: the rules are tested on what profiles hold.
REAL_FRAMES = [
    ("quarkus", "io/netty/channel/socket/nio/NioSocketChannel.doWrite", "http_server"),
    ("quarkus", "io/quarkus/vertx/core/runtime/VertxLocalsHelper.getLocal", "http_server"),
    ("spring-mvc", "org/apache/tomcat/util/net/NioEndpoint$Poller.run", "http_server"),
    ("tfb-spring", "org/xnio/nio/WorkerThread.run", "http_server"),
    ("tfb-spring", "io/undertow/server/protocol/http/HttpReadListener.handleEvent", "http_server"),
    ("tfb-spring", "org/jboss/threads/EnhancedQueueExecutor$PoolThreadNode.park", "http_server"),
    ("spring-webflux", "reactor/netty/http/server/HttpTrafficHandler.channelRead", "http_server"),
    ("quarkus", "io/vertx/ext/web/impl/RouteState.pathMatches", "routing"),
    ("tfb-quarkus", "org/jboss/resteasy/reactive/server/handlers/ClassRoutingHandler.handle", "routing"),
    ("spring-mvc", "org/springframework/web/servlet/FrameworkServlet.processRequest", "routing"),
    ("spring-webflux", "reactor/core/publisher/MonoFlatMap$FlatMapMain.onNext", "routing"),
    ("quarkus", "com/fasterxml/jackson/databind/ser/BeanPropertyWriter.serializeAsField", "json"),
    ("spring-webflux", "org/springframework/http/codec/json/Jackson2CodecSupport.selectObjectMapper", "json"),
    ("spring-mvc", "org/springframework/http/converter/json/AbstractJackson2HttpMessageConverter.selectObjectMapper",
     "json"),
    ("spring-mvc-zipcodes-cpu", "org/mariadb/jdbc/ClientPreparedStatement.executeQuery", "db"),
    ("spring-mvc-zipcodes-cpu", "com/zaxxer/hikari/pool/HikariProxyPreparedStatement.executeQuery", "db"),
    ("spring-mvc-zipcodes-cpu", "sun/security/ssl/SSLSocketOutputRecord.deliver", "tls"),
    ("quarkus", "io/quarkus/micrometer/runtime/binder/vertx/VertxHttpServerMetrics.requestBegin", "metrics"),
    ("spring-mvc", "io/micrometer/common/KeyValues.toKeyValues", "metrics"),
    ("spring-webflux", "org/springframework/http/server/reactive/observation/DefaultServerRequestObservationConvention"
     ".httpUrl", "metrics"),
    ("spring-webflux", "ch/qos/logback/classic/spi/TurboFilterList.getTurboFilterChainDecision", "logging"),
    ("spring-mvc", "java/util/logging/Logger.isLoggable", "logging"),
    ("quarkus", "org/jboss/logging/Logger.debugf", "logging"),
    ("tfb-spring", "DefNewGeneration::collect", "gc"),
    ("spring-webflux", "SerialHeap::process_roots", "gc"),
    ("quarkus", "CompileBroker::compiler_thread_loop", "jit"),
    ("quarkus", "PhaseChaitin::Split", "jit"),
    ("tfb-spring-webflux", "CardTableBarrierSetC2::post_barrier", "jit"),  # C2 code, though its name starts as the GC's
    ("quarkus", "dev/perflab/quarkus/TechEmpowerResource.json", "app"),
    ("tfb-quarkus", "io/quarkus/benchmark/resource/JsonResource.json", "app"),
    ("tfb-spring", "hello/web/WebmvcRouter.lambda$route$1", "app"),
    ("tfb-spring-webflux", "benchmark/web/TextHandler.handle", "app"),
    # The JDK, the C library and the kernel are no layer: their CPU goes to whoever called them.
    ("spring-mvc", "java/util/Objects.equals", None),
    ("spring-mvc", "finish_task_switch.isra.0_[k]", None),
    ("quarkus", "VMThread::run", None),
]


@pytest.mark.parametrize(("source", "frame", "layer"), REAL_FRAMES, ids=[f"{row[2]}:{row[1]}" for row in REAL_FRAMES])
def test_each_rule_on_real_frames(source: str, frame: str, layer: str | None) -> None:
    name = source if source.endswith("-cpu") else plaintext_json(source)
    matching = sorted(f for f in frames_of(name) if profile.frame_name(f) == profile.frame_name(frame))
    assert matching, f"{frame} is not in {name}'s stacks"
    assert {profile.frame_layer(f) for f in matching} == {layer}


def test_every_layer_of_the_table_is_tested_on_real_frames() -> None:
    assert {row[2] for row in REAL_FRAMES} == set(profile.LAYER_RULES) | {None}


def test_a_stack_takes_the_layer_of_its_innermost_matching_frame() -> None:
    # A real stack (spring-mvc): Tomcat -> Spring MVC -> Jackson -> the JDK. Jackson is innermost.
    (stack,) = [s for s in stacks_of(plaintext_json("spring-mvc"))
                if s.frames[-1] == "com/fasterxml/jackson/core/json/UTF8JsonGenerator._flushBuffer"][:1]
    layers = [profile.frame_layer(frame) for frame in stack.frames]
    assert "http_server" in layers and "routing" in layers
    assert profile.stack_layer(stack.frames) == "json"
    # No matching frame: jvm without a Java frame, other with one.
    assert profile.stack_layer(("C1 Runtime slow_subtype_check_blob",)) == "jvm"
    assert profile.stack_layer(("[unknown]", "java/util/concurrent/ScheduledThreadPoolExecutor$DelayedWorkQueue.take",
                                "futex_wait_[k]")) == "other"


def test_longest_prefix_wins_across_layers() -> None:
    assert profile.frame_layer("io/vertx/core/http/impl/Http1xServerConnection.handleMessage") == "http_server"
    assert profile.frame_layer("io/vertx/core/json/jackson/JacksonCodec.encode") == "json"
    assert profile.frame_layer("io/netty/handler/ssl/SslHandler.wrap_[j]") == "tls"
    # Whole package parts only: 'hello' is TechEmpower's Spring package, 'helloworld' is not.
    assert profile.frame_layer("helloworld/Main.main") is None
    # A Java frame never matches a C++ rule, nor the other way round.
    assert profile.frame_layer("G1/Foo.bar") is None
    assert profile.frame_layer("G1ParScanThreadState::trim_queue") == "gc"


def test_the_table_names_each_prefix_once() -> None:
    prefixes = [prefix for rules in profile.LAYER_RULES.values() for prefix in rules]
    assert len(prefixes) == len(set(prefixes))
    with pytest.raises(ValueError, match="in both http_server and json"):
        profile._build_index({"http_server": ("io.netty",), "json": ("io.netty",)})


def test_top_frames_are_by_self_time() -> None:
    summary = profile.summarize(stacks_of(plaintext_json("spring-mvc")), "spring-mvc", top=5)
    assert len(summary.top_frames) == 5
    counts = [frame.self_samples for frame in summary.top_frames]
    assert counts == sorted(counts, reverse=True)
    leaf_samples = sum(s.samples for s in stacks_of(plaintext_json("spring-mvc"))
                       if s.frames[-1] == summary.top_frames[0].frame)
    assert summary.top_frames[0].self_samples == leaf_samples


def test_percentages_add_up_to_100() -> None:
    assert profile.percentages([1, 1, 1]) == [33.4, 33.3, 33.3]
    assert sum(profile.percentages([5, 7, 11, 13, 977])) == pytest.approx(100.0)
    assert profile.percentages([0, 0]) == [0.0, 0.0]


@pytest.mark.parametrize(("text", "message"), [
    ("", "no stacks (an empty profile"),
    ("a;b;c\n", "line 1: not 'frame;frame;... count'"),
    ("a;b 3\na;;b 2\n", "line 2: an empty frame between ';'"),
    ("a;b 3\na;b x\n", "line 2: not 'frame;frame;... count'"),
])
def test_bad_collapsed_stacks_are_refused_with_the_line(text: str, message: str) -> None:
    with pytest.raises(profile.ProfileError, match=message.replace("(", r"\(").replace(".", r"\.")):
        profile.parse_collapsed(text, "x.collapsed")


def test_the_summary_file_round_trips_and_matches_its_schema(tmp_path: Path) -> None:
    summary = profile.summarize(stacks_of(plaintext_json("quarkus")), "quarkus.collapsed")
    rundir.write_profile_summary(tmp_path, summary)
    written = tmp_path / rundir.PROFILE_SUMMARY
    schema = json.loads((Path(rundir.__file__).with_name("schemas") / "profile-summary.schema.json").read_text())
    jsonschema.validate(json.loads(written.read_text()), schema)
    assert rundir.read_profile_summary(tmp_path) == summary
    written.write_text(written.read_text().replace('"samples"', '"sampels"', 1))
    with pytest.raises(rundir.RunFileError, match="not a perflab profile summary"):
        rundir.read_profile_summary(tmp_path)


def perflab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def test_cli_summarize_prints_layers_and_top_frames_and_writes_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "profile-summary.json"
    done = perflab("profile", "summarize", str(fixture(plaintext_json("spring-mvc"))), "--json", str(out), "--top", "3")
    assert done.returncode == 0, done.stderr
    summary = rundir.load_profile_summary(out)
    lines = done.stdout.splitlines()
    assert lines[0] == f"spring-mvc-plaintext-json-cpu.collapsed.gz: {summary.samples} samples in {summary.stacks} stacks"
    layer_lines = printed_layers(done.stdout)
    assert layer_lines[0].endswith("  HTTP server")  # the largest first
    assert round(sum(float(line.split("%")[0]) for line in layer_lines), 1) == 100.0
    top = lines[lines.index("top 3 frames by self time") + 2:]
    assert len(top) == 3 and top[0].endswith(summary.top_frames[0].frame)


def test_cli_summarize_reads_plain_text_too(tmp_path: Path) -> None:
    plain = tmp_path / "profile.collapsed"
    plain.write_bytes(gzip.decompress(fixture(plaintext_json("tfb-quarkus")).read_bytes()))
    done = perflab("profile", "summarize", str(plain))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("profile.collapsed: ")


@pytest.mark.parametrize(("content", "code", "message"), [
    (None, 4, "no such file"),
    (b"\x00\xff\xfe", 4, "not text: give async-profiler's collapsed output"),
    (b"frame;frame\n", 4, "line 1: not 'frame;frame;... count'"),
])
def test_cli_summarize_refuses_bad_input_in_one_line(tmp_path: Path, content: bytes | None, code: int,
                                                      message: str) -> None:
    path = tmp_path / "p.collapsed"
    if content is not None:
        path.write_bytes(content)
    done = perflab("profile", "summarize", str(path))
    assert done.returncode == code
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_cli_summarize_refuses_a_bad_top() -> None:
    done = perflab("profile", "summarize", str(fixture(plaintext_json("quarkus"))), "--top", "0")
    assert done.returncode == 2 and "must be a whole number above 0" in done.stderr
