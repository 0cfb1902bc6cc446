// The browser table's page: it draws what the server sends and sends the person's clicks back. No rule of the
// game lives here: the legal moves, the boxes' points, the coach's numbers and the analysis all come from the API.
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const MOVE_DELAY = Math.min(Number(params.get("delay") ?? 350) || 0, 5000); // ms between shown agent moves
const RECORD_KEY = "yacht-rl.record.v1";

let options = null;
let game = null; // the last state the server sent
let kept = [false, false, false, false, false];
let busy = false;
let lastSetup = null;

// ---------------------------------------------------------------------------------------------------------------
// Talking to the server
// ---------------------------------------------------------------------------------------------------------------
async function api(method, path, body, headers) {
  const init = { method, headers: headers || {}, credentials: "same-origin" };
  if (body !== undefined) {
    if (body instanceof Blob) {
      init.body = body;
    } else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = { error: `${response.status} ${response.statusText}` };
  }
  if (!response.ok) {
    const error = new Error(data && data.error ? data.error : `${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function showError(error) {
  $("error-text").textContent = error.message || String(error);
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error-text").textContent = "";
}

// One request at a time: the controls are disabled while one is on its way (a click there is not dropped unseen:
// the button cannot be pressed), and enabled again as soon as the answer is drawn.
async function guarded(action) {
  if (busy) return;
  busy = true;
  document.body.classList.add("busy");
  if (game) renderControls();
  clearError();
  try {
    await action();
  } catch (error) {
    showError(error);
  } finally {
    busy = false;
    document.body.classList.remove("busy");
    if (game) renderControls();
  }
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const fmt = (x, digits = 2) => Number(x).toFixed(digits);
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------------
// The setup form
// ---------------------------------------------------------------------------------------------------------------
function seatRow(spec) {
  const select = el("select", { class: "seat-spec" });
  const custom = el("input", { class: "seat-custom", placeholder: "e.g. win:3 or ppo:standard", hidden: true });
  select.addEventListener("change", () => {
    custom.hidden = select.value !== "";
  });
  const remove = el("button", { type: "button", class: "remove-seat", title: "remove this seat" }, "×");
  const row = el("div", { class: "seat" }, select, custom, remove);
  remove.addEventListener("click", () => {
    if ($("seat-list").children.length > 1) row.remove();
    updateSeatButtons();
  });
  fillMenu(row, spec);
  return row;
}

// A model that plays its own rules, or its own table size (options.tables, by spec), is offered only there; a seat
// whose model no longer fits keeps its spec as typed (the server says why it cannot sit).
function fits(agent) {
  const table = options.tables[agent];
  if (!table) return true;
  const seats = $("seat-list").children.length;
  return table.rules === $("rules").value && (table.players === null || table.players === seats);
}

function fillMenu(row, spec) {
  const select = row.querySelector(".seat-spec");
  const custom = row.querySelector(".seat-custom");
  select.replaceChildren();
  for (const agent of options.agents.filter(fits)) select.append(el("option", { value: agent }, agent));
  select.append(el("option", { value: "" }, "other agent spec…"));
  const listed = spec !== "" && options.agents.includes(spec) && fits(spec);
  select.value = listed ? spec : "";
  custom.hidden = listed;
  if (!listed) custom.value = spec;
}

function seatSpec(row) {
  const spec = row.querySelector(".seat-spec").value;
  return spec === "" ? row.querySelector(".seat-custom").value.trim() : spec;
}

function updateSeatButtons() {
  $("add-seat").disabled = $("seat-list").children.length >= options.max_seats;
  for (const row of $("seat-list").children) fillMenu(row, seatSpec(row));
}

function readSetup() {
  const seats = [...$("seat-list").children].map(seatSpec);
  const setup = { rules: $("rules").value, seats, coach: $("coach-mode").value };
  const seed = $("seed").value.trim();
  if (seed !== "") setup.seed = /^[0-9]+$/.test(seed) ? Number(seed) : seed; // the server checks it
  return setup;
}

async function startGame(setup) {
  const state = await api("POST", "/api/games", setup);
  lastSetup = { ...setup, seed: state.seed };
  kept = [false, false, false, false, false];
  game = null;
  clearLog();
  $("coach").hidden = true;
  $("table").hidden = false;
  $("setup").hidden = true;
  render(state);
  logMoves(state);
}

// ---------------------------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------------------------
function personOnTurn() {
  return game && !game.over && game.people[game.current];
}

function renderControls() {
  const mine = personOnTurn() && !busy;
  $("roll").disabled = !mine || game.rolls_left === 0;
  $("ask-coach").disabled = !mine || game.coach_mode === "off";
  for (const die of $("dice").children) die.disabled = !mine || game.rolls_left === 0;
  for (const button of $("sheet").querySelectorAll("button")) button.disabled = !mine;
  for (const button of $("coach").querySelectorAll("button")) button.disabled = !mine;
}

function render(state) {
  game = state;
  const names = state.names;
  if (state.over) {
    $("status").textContent = `${state.title} (${state.rules} rules, seed ${state.seed}): final scores`;
  } else {
    const left = state.rolls_left === 1 ? "1 re-roll left" : `${state.rolls_left} re-rolls left`;
    $("status").textContent =
      `${state.title} (${state.rules} rules, seed ${state.seed}): round ${state.turn + 1} of ${state.turns}, ` +
      `${names[state.current]} to play, ${left}`;
  }
  // The dice.
  const dice = $("dice");
  dice.replaceChildren();
  if (!state.over) {
    state.dice.forEach((face, i) => {
      const die = el(
        "button",
        { type: "button", class: "die" + (kept[i] ? " kept" : ""), "data-index": i, "aria-pressed": String(kept[i]) },
        face,
      );
      die.addEventListener("click", () => {
        kept[i] = !kept[i];
        die.classList.toggle("kept", kept[i]);
        die.setAttribute("aria-pressed", String(kept[i]));
      });
      dice.append(die);
    });
  }
  $("roll").textContent = state.over ? "Re-roll" : `Re-roll (${state.rolls_left} left)`;
  for (const id of ["roll", "ask-coach", "help"]) $(id).hidden = state.over; // nothing left to press
  renderSheet(state);
  if (state.coach) renderCoach(state.coach);
  else if (state.over || !personOnTurn()) $("coach").hidden = true;
  $("over").hidden = !state.over;
  if (state.over) renderOver(state);
  renderControls();
}

function renderSheet(state) {
  const sheet = $("sheet");
  sheet.replaceChildren();
  const head = el("tr", {}, el("th", {}, "box"));
  state.names.forEach((name, p) => head.append(el("th", { class: p === state.current ? "on-turn" : "" }, name)));
  sheet.append(head);
  for (const row of state.sheet) {
    const tr = el("tr", { "data-box": row.box }, el("td", {}, row.label));
    row.cells.forEach((value, p) => {
      if (value !== null) {
        tr.append(el("td", {}, value));
      } else if (p === state.current && row.blocked) {
        tr.append(el("td", { class: "now blocked", title: "the joker rules this box out" }, "–"));
      } else if (p === state.current && row.now !== null) {
        if (state.people[p]) {
          const button = el("button", { type: "button", class: "score", "data-box": row.box }, `(${row.now})`);
          button.addEventListener("click", () => move({ score: row.box }));
          tr.append(el("td", { class: "now" }, button));
        } else {
          tr.append(el("td", { class: "now" }, `(${row.now})`));
        }
      } else {
        tr.append(el("td", {}, "–"));
      }
    });
    sheet.append(tr);
  }
  for (const bonus of state.bonus_rows) {
    const tr = el("tr", { class: "bonus" }, el("td", {}, bonus.label));
    bonus.cells.forEach((value) => tr.append(el("td", {}, value)));
    sheet.append(tr);
  }
  const total = el("tr", { class: "total" }, el("td", {}, "total"));
  state.totals.forEach((value) => total.append(el("td", { class: "total-cell" }, value)));
  sheet.append(total);
}

function renderCoach(view) {
  const box = $("coach");
  box.replaceChildren();
  box.hidden = false;
  box.append(el("h3", {}, `Coach: expected final score ${fmt(view.expected_final)} with the best move`));
  const oddsLabel =
    view.odds === "exact"
      ? "win chance (exact two-player values, against perfect play)"
      : view.odds === "estimate"
        ? "win chance (estimate: the win agent's model, everyone playing the solver after)"
        : null;
  if (oddsLabel) box.append(el("p", { class: "odds" }, oddsLabel));
  const table = el("table", { id: "coach-table" });
  const head = el("tr", {}, el("th", {}, "option"), el("th", {}, "expected final"), el("th", {}, "loss"));
  if (view.odds) head.append(el("th", {}, "win chance"));
  head.append(el("th", {}, ""));
  table.append(head);
  for (const option of view.options) {
    const tr = el(
      "tr",
      { class: option.best ? "best" : "", "data-action": option.action },
      el("td", {}, option.words),
      el("td", { class: "expected" }, fmt(option.expected_final, 3)),
      el("td", { class: "loss-cell" }, fmt(option.loss, 3)),
    );
    if (view.odds) {
      const toWin = option.action === view.best_to_win;
      tr.append(el("td", { class: toWin ? "chance to-win" : "chance", title: toWin ? "the best chance to win" : "" },
        (toWin ? "★ " : "") + pct(option.win_chance)));
    }
    const play = el("button", { type: "button" }, "play");
    play.addEventListener("click", () => move({ action: option.action }));
    tr.append(el("td", {}, play));
    if (option.keep) {
      tr.addEventListener("mouseenter", () => hintDice(option.keep));
      tr.addEventListener("mouseleave", () => hintDice(null));
    }
    table.append(tr);
  }
  box.append(el("div", { class: "scroll" }, table));
}

function hintDice(keep) {
  [...$("dice").children].forEach((die, i) => die.classList.toggle("hinted", Boolean(keep && keep[i])));
}

// The log of moves: the table is drawn at once with each answer, and the agents' moves that led to it are then
// written into the log one by one (MOVE_DELAY apart), in order, while the person may already act.
let logged = 0; // the moves of this game written into the log or queued for it
let logQueue = Promise.resolve();
let logGame = 0; // a new game stops the writing of the last one's

function clearLog() {
  logGame += 1;
  logged = 0;
  logQueue = Promise.resolve();
  $("log").replaceChildren();
}

function logMoves(state) {
  const fresh = state.moves.slice(logged);
  logged = state.moves.length;
  const mine = logGame;
  logQueue = logQueue.then(async () => {
    for (const m of fresh) {
      if (mine !== logGame) return;
      const log = $("log");
      log.append(el("li", { class: m.person ? "person" : "agent" }, `${m.name}: ${m.text}`));
      log.scrollTop = log.scrollHeight;
      if (!m.person && MOVE_DELAY > 0) await sleep(MOVE_DELAY);
    }
  });
}

async function move(what) {
  await guarded(async () => {
    const state = await api("POST", `/api/games/${game.id}/moves`, { step: game.step, move: what });
    kept = [false, false, false, false, false];
    $("coach").hidden = true;
    render(state);
    logMoves(state);
  });
}

function renderOver(state) {
  const { totals } = state.result;
  const scores = state.names.map((name, p) => `${name} ${totals[p]}`).join(", ");
  $("result").textContent = state.result.outcome ? `final: ${scores}; ${state.result.outcome}` : `final: ${scores}`;
  const box = $("analysis");
  box.replaceChildren();
  for (const seat of state.analysis.seats) {
    box.append(
      el(
        "h3",
        {},
        `Analysis for ${seat.name}: ${fmt(seat.given_away)} points given away, mean loss ` +
          `${fmt(seat.mean_loss, 3)} per decision (${seat.best_moves} of ${seat.decisions.length} best moves)`,
      ),
    );
    const table = el("table", { class: "analysis-table" });
    table.append(
      el(
        "tr",
        {},
        el("th", {}, "round"),
        el("th", {}, "dice"),
        el("th", {}, "re-rolls left"),
        el("th", {}, "your choice"),
        el("th", {}, "best"),
        el("th", {}, "loss"),
      ),
    );
    for (const d of seat.decisions) {
      table.append(
        el(
          "tr",
          {},
          el("td", {}, d.turn + 1),
          el("td", {}, d.dice.join(" ")),
          el("td", {}, d.rolls_left),
          el("td", {}, d.choice),
          el("td", {}, d.loss > 0 ? d.best : "(the same)"),
          el("td", { class: d.loss > 0 ? "loss" : "" }, fmt(d.loss, 3)),
        ),
      );
    }
    box.append(el("div", { class: "scroll" }, table));
  }
  keepRecord(state);
}

// ---------------------------------------------------------------------------------------------------------------
// The record kept in this browser: games, wins, mean loss, the streak of best moves
// ---------------------------------------------------------------------------------------------------------------
function loadRecord() {
  try {
    const stored = JSON.parse(localStorage.getItem(RECORD_KEY) || "null");
    if (stored && typeof stored === "object") return stored;
  } catch (e) {
    /* a damaged record starts again */
  }
  return { games: 0, tables: 0, wins: 0, decisions: 0, loss: 0, streak: 0, best_streak: 0, counted: [] };
}

function keepRecord(state) {
  const record = loadRecord();
  const seat = state.analysis.seats[0];
  if (!seat || record.counted.includes(state.id)) return showRecord();
  record.counted = [...record.counted, state.id].slice(-50);
  record.games += 1;
  if (state.names.length > 1) {
    record.tables += 1;
    if (state.result.winners.length === 1 && state.result.winners[0] === seat.seat) record.wins += 1;
  }
  for (const d of seat.decisions) {
    record.decisions += 1;
    record.loss += d.loss;
    record.streak = d.loss > 0 ? 0 : record.streak + 1;
    record.best_streak = Math.max(record.best_streak, record.streak);
  }
  localStorage.setItem(RECORD_KEY, JSON.stringify(record));
  showRecord();
}

function showRecord() {
  const r = loadRecord();
  if (!r.games) {
    $("record").textContent = "no games yet";
    return;
  }
  const mean = r.decisions ? r.loss / r.decisions : 0;
  const played = [`${r.games} game${r.games === 1 ? "" : "s"}`];
  if (r.tables) played.push(`${r.wins} won of ${r.tables} at a table`); // solo games have no winner to count
  $("record").textContent =
    `${played.join(", ")}, mean loss ${fmt(mean, 3)} per decision, ` +
    `streak of best moves ${r.streak} (best ${r.best_streak})`;
}

// ---------------------------------------------------------------------------------------------------------------
// Replays
// ---------------------------------------------------------------------------------------------------------------
let replay = null; // the summary
let gamesOffset = 0;
let replayGame = null;
let stepIndex = 0;
const PAGE = 25;

let listings = 0; // the latest listing wins: an earlier answer that comes back later is dropped

async function loadReplayList(select) {
  const ticket = ++listings;
  const data = await api("GET", "/api/replays");
  if (ticket !== listings) return;
  const list = $("replay-list");
  list.replaceChildren(el("option", { value: "" }, data.replays.length ? "a loaded record…" : "(no record loaded)"));
  for (const r of data.replays) list.append(el("option", { value: r.id }, `${r.name} (${r.rules}: ${r.agents.join(", ")})`));
  if (select) list.value = select;
}

let opening = 0; // the latest record asked for is the one drawn
let uploading = 0; // uploads on their way

// The replays view opens the first record listed (the server's own, yacht-web --replay) when nothing is open yet
// and the visitor is not already opening or uploading one.
async function openFirstReplay() {
  const first = $("replay-list").options[1];
  if (replay || opening || uploading || !first) return;
  $("replay-list").value = first.value;
  await openReplay(first.value);
}

async function openReplay(id) {
  const mine = ++opening;
  const summary = await api("GET", `/api/replays/${id}`);
  if (mine !== opening) return;
  replay = summary;
  renderReplaySummary();
  gamesOffset = 0;
  $("replay-game").hidden = true;
  await loadGames();
}

function renderReplaySummary() {
  const box = $("replay-summary");
  box.replaceChildren(
    el(
      "p",
      {},
      `${replay.name}: ${replay.rules} rules, ${replay.games} games per agent, seed ${replay.seed} ` +
        `(yacht-rl ${replay.yacht_rl}); optimal expected score ${fmt(replay.optimal_expected_score, 3)}`,
    ),
  );
  const table = el("table", { id: "replay-agents" });
  table.append(el("tr", {}, ...["agent", "games", "mean score", "mean regret / game", "decisions"].map((h) => el("th", {}, h))));
  for (const a of replay.agents) {
    table.append(
      el("tr", {}, el("td", {}, a.agent), el("td", {}, a.games), el("td", {}, fmt(a.mean_score)),
        el("td", {}, fmt(a.mean_regret, 3)), el("td", {}, a.decisions)),
    );
  }
  box.append(el("div", { class: "scroll" }, table));
  const agent = $("replay-agent");
  agent.replaceChildren(el("option", { value: "" }, "all"));
  for (const a of replay.agents) agent.append(el("option", { value: a.agent }, a.agent));
  $("replay-body").hidden = false;
}

let gamesRequest = 0; // only the latest request's answer is drawn (the filters may change while one is on its way)

async function loadGames() {
  const mine = ++gamesRequest;
  const query = new URLSearchParams({ order: $("replay-order").value, offset: gamesOffset, limit: PAGE });
  if ($("replay-agent").value) query.set("agent", $("replay-agent").value);
  const data = await api("GET", `/api/replays/${replay.id}/games?${query}`);
  if (mine !== gamesRequest) return;
  const table = $("replay-games");
  table.replaceChildren(el("tr", {}, ...["agent", "game", "score", "regret", "decisions"].map((h) => el("th", {}, h))));
  for (const g of data.games) {
    const tr = el(
      "tr",
      { "data-index": g.index, class: replayGame && replayGame.index === g.index ? "selected" : "" },
      el("td", {}, g.agent), el("td", {}, g.game), el("td", {}, g.score),
      el("td", { class: "game-regret" }, fmt(g.regret, 3)), el("td", {}, g.decisions),
    );
    tr.addEventListener("click", () => guarded(() => openGame(g.index)));
    table.append(tr);
  }
  const last = Math.min(data.offset + PAGE, data.total);
  $("games-page").textContent = `${data.total ? data.offset + 1 : 0}–${last} of ${data.total}`;
  $("games-prev").disabled = data.offset === 0;
  $("games-next").disabled = last >= data.total;
}

async function openGame(index) {
  replayGame = await api("GET", `/api/replays/${replay.id}/games/${index}`);
  for (const tr of $("replay-games").querySelectorAll("tr[data-index]")) {
    tr.classList.toggle("selected", Number(tr.dataset.index) === index);
  }
  stepIndex = 0;
  renderGame();
  $("replay-game").scrollIntoView({ block: "start" }); // it opens below the list of games: bring it into view
}

function stepOrder() {
  return $("costliest").checked ? replayGame.costliest : replayGame.decisions.map((_, i) => i);
}

function renderGame() {
  const g = replayGame;
  $("replay-game").hidden = false;
  $("replay-game-title").textContent = `${g.agent}, game ${g.game}: score ${g.score}, regret ${fmt(g.regret, 3)}`;
  $("plot-category").replaceChildren(barPlot(g.categories, g.category_regret, "regret"));
  $("plot-turn").replaceChildren(barPlot(g.turn_regret.map((_, t) => `${t + 1}`), g.turn_regret, "regret"));
  const order = stepOrder();
  const table = $("decisions");
  table.replaceChildren(
    el("tr", {}, ...["#", "round", "dice", "re-rolls left", "choice", "solver's best", "regret"].map((h) => el("th", {}, h))),
  );
  order.forEach((i, position) => {
    const d = g.decisions[i];
    const tr = el(
      "tr",
      { "data-decision": i },
      el("td", {}, i + 1), el("td", {}, d.turn + 1), el("td", {}, d.dice.join(" ")), el("td", {}, d.rolls_left),
      el("td", {}, d.choice), el("td", {}, d.regret > 0 ? d.best : "(the same)"),
      el("td", { class: d.regret > 0 ? "loss" : "" }, fmt(d.regret, 3)),
    );
    tr.addEventListener("click", () => {
      stepIndex = position;
      renderStep();
    });
    table.append(tr);
  });
  stepIndex = Math.min(stepIndex, Math.max(order.length - 1, 0));
  renderStep();
}

function renderStep() {
  const order = stepOrder();
  const card = $("decision-card");
  $("step-prev").disabled = stepIndex <= 0;
  $("step-next").disabled = stepIndex >= order.length - 1;
  if (!order.length) {
    $("step-where").textContent = "no costly decision: every one was the solver's";
    card.replaceChildren();
    return;
  }
  const i = order[stepIndex];
  const d = replayGame.decisions[i];
  $("step-where").textContent = `decision ${i + 1} of ${replayGame.decisions.length}`;
  for (const tr of $("decisions").querySelectorAll("tr[data-decision]")) {
    tr.classList.toggle("selected", Number(tr.dataset.decision) === i);
  }
  card.replaceChildren(
    el("p", {}, `round ${d.turn + 1}, dice ${d.dice.join(" ")}, ${d.rolls_left} re-rolls left, total ${d.total}`),
    el("p", {}, `open: ${d.open.join(", ")}`),
    el("p", { class: "choice" }, `${replayGame.agent}: ${d.choice}`),
    el(
      "p",
      { class: d.regret > 0 ? "loss" : "" },
      d.regret > 0 ? `solver: ${d.best}; regret ${fmt(d.regret, 3)}` : "the solver's choice (regret 0)",
    ),
  );
}

// A bar chart (SVG) of one value per label: a y axis with its ticks and name, the labels under the bars (turned
// upright when they are words, so that they never run together), each bar's value in its tooltip.
function barPlot(labels, values, axisName) {
  const ns = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const upright = labels.some((label) => label.length > 2);
  const slot = 22;
  const left = 44; // the y axis's tick labels and name
  const plotHeight = 100;
  const top = 8;
  const bottom = upright ? 10 + 6 * Math.max(...labels.map((label) => label.length)) : 18; // ~6 px a character
  const width = left + labels.length * slot + 4;
  const height = top + plotHeight + bottom;
  const most = Math.max(...values, 0);
  const scale = most > 0 ? most : 1;
  const svg = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "bars" });
  const baseline = top + plotHeight;
  svg.append(svgEl("line", { class: "axis", x1: left, y1: top, x2: left, y2: baseline }));
  svg.append(svgEl("line", { class: "axis", x1: left, y1: baseline, x2: width - 4, y2: baseline }));
  for (const tick of [0, scale / 2, scale]) {
    const y = baseline - (tick / scale) * plotHeight;
    svg.append(svgEl("line", { class: "axis", x1: left - 4, y1: y, x2: left, y2: y }));
    svg.append(svgEl("text", { class: "tick", x: left - 6, y: y + 3, "text-anchor": "end" }, fmt(tick, 2)));
  }
  const middle = top + plotHeight / 2;
  svg.append(
    svgEl("text", { class: "axis-name", x: 10, y: middle, "text-anchor": "middle", transform: `rotate(-90 10 ${middle})` }, axisName),
  );
  labels.forEach((label, i) => {
    const x = left + i * slot;
    const h = (Math.max(values[i], 0) / scale) * plotHeight;
    const bar = svgEl("rect", { class: "bar", x: x + 3, y: baseline - h, width: slot - 6, height: h });
    bar.append(svgEl("title", {}, `${label}: ${fmt(values[i], 3)}`));
    svg.append(bar);
    const center = x + slot / 2;
    const attrs = upright
      ? { class: "label", x: center + 3, y: baseline + 6, "text-anchor": "end", transform: `rotate(-90 ${center + 3} ${baseline + 6})` }
      : { class: "label", x: center, y: baseline + 13, "text-anchor": "middle" };
    svg.append(svgEl("text", attrs, label));
  });
  return svg;
}

async function upload(file) {
  uploading += 1;
  try {
    const summary = await api("POST", "/api/replays", file, {
      "Content-Type": "application/x-ndjson",
      "X-File-Name": file.name.replace(/[^\x20-\x7e]/g, "_"),
    });
    await loadReplayList(summary.id);
    await openReplay(summary.id);
  } finally {
    uploading -= 1;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Wiring
// ---------------------------------------------------------------------------------------------------------------
function showView(name) {
  $("view-play").hidden = name !== "play";
  $("view-replays").hidden = name !== "replays";
  $("tab-play").classList.toggle("active", name === "play");
  $("tab-replays").classList.toggle("active", name === "replays");
  // Not guarded: a listing must not hold the lock that an upload made meanwhile would find taken (and be dropped).
  if (name === "replays") {
    clearError();
    loadReplayList($("replay-list").value)
      .then(openFirstReplay)
      .catch(showError);
  }
}

async function init() {
  options = await api("GET", "/api/options");
  for (const preset of options.presets) $("rules").append(el("option", { value: preset.name }, `${preset.name} (${preset.title})`));
  $("seat-list").append(seatRow("human"));
  updateSeatButtons();
  $("rules").addEventListener("change", updateSeatButtons);
  showRecord();
  $("add-seat").addEventListener("click", () => {
    if ($("seat-list").children.length < options.max_seats) $("seat-list").append(seatRow("optimal"));
    updateSeatButtons();
  });
  $("setup").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(() => startGame(readSetup()));
  });
  $("roll").addEventListener("click", () => move({ keep: kept.flatMap((k, i) => (k ? [i] : [])) }));
  $("ask-coach").addEventListener("click", () =>
    guarded(async () => renderCoach(await api("GET", `/api/games/${game.id}/coach`))),
  );
  $("same-dice").addEventListener("click", () => guarded(() => startGame(lastSetup)));
  $("new-game").addEventListener("click", () => {
    $("table").hidden = true;
    $("setup").hidden = false;
    game = null;
  });
  $("error-close").addEventListener("click", clearError);
  $("tab-play").addEventListener("click", () => showView("play"));
  $("tab-replays").addEventListener("click", () => showView("replays"));
  $("upload").addEventListener("change", () => {
    const file = $("upload").files[0];
    if (file) guarded(() => upload(file));
  });
  $("replay-list").addEventListener("change", () => {
    if ($("replay-list").value) guarded(() => openReplay($("replay-list").value));
  });
  const reload = (offset) => {
    gamesOffset = offset;
    clearError();
    loadGames().catch(showError);
  };
  $("replay-agent").addEventListener("change", () => reload(0));
  $("replay-order").addEventListener("change", () => reload(0));
  $("games-prev").addEventListener("click", () => reload(Math.max(0, gamesOffset - PAGE)));
  $("games-next").addEventListener("click", () => reload(gamesOffset + PAGE));
  $("costliest").addEventListener("change", () => {
    stepIndex = 0;
    renderGame();
  });
  $("step-prev").addEventListener("click", () => {
    stepIndex = Math.max(0, stepIndex - 1);
    renderStep();
  });
  $("step-next").addEventListener("click", () => {
    stepIndex = Math.min(stepOrder().length - 1, stepIndex + 1);
    renderStep();
  });
  if (params.get("view") === "replays") showView("replays");
  document.body.dataset.ready = "1";
}

init().catch(showError);
