"""The Negotiate page's second section: candidate ε values side by side, each with its
utility, the trivial baseline and what it means for a person in the data."""

from __future__ import annotations

import streamlit as st

from dpviz.app import negotiate as negotiate
from dpviz.app.curves import SweepRun
from dpviz.figures.common import ALL_METRIC_NAMES
from dpviz.figures.teach import hypothesis_testing_figure
from dpviz.privacy.risk import EpsilonChoice

# Plain session value: the suggestion the candidates last followed (none yet: a marker
# that equals no ε, not even "no suggestion").
FOLLOWED, NOT_FOLLOWED = "negotiate.candidates_followed", "not yet"


def section(
    sweep: SweepRun, config: dict, metric: str, choice: EpsilonChoice, K: dict
) -> tuple[list[float], float]:
    """2–3 candidate ε side by side (``K``: the page's session keys); returns
    (candidates, prior)."""
    st.header("2 · What each candidate ε means for a person in the data")
    epsilons = negotiate.swept_epsilons(sweep, config)
    # The candidates follow dpviz's suggestion (a new metric or loss moves it) until the
    # people deciding pick their own.
    fresh = negotiate.follow_candidates(
        st.session_state.get(K["candidates"]),
        st.session_state.get(FOLLOWED, NOT_FOLLOWED),
        epsilons,
        choice.epsilon,
    )
    if fresh is not None:
        st.session_state[K["candidates"]] = fresh
        st.session_state[FOLLOWED] = choice.epsilon
    st.session_state.setdefault(K["prior"], 0.5)
    a, b = st.columns([3, 2])
    candidates = a.multiselect(
        "Candidate ε values (up to 3)",
        epsilons,
        key=K["candidates"],
        max_selections=negotiate.MAX_CANDIDATES,
        format_func=lambda v: f"ε = {v:g}",
    )
    prior = b.select_slider(
        "Attacker's prior belief p",
        negotiate.PRIORS,
        key=K["prior"],
        format_func=lambda v: f"{100 * v:g}%",
        help="How sure an attacker is, before seeing the model, that a given person is in "
        "the data (50% = a coin flip; 1% = one in a hundred).",
    )
    if not candidates:
        st.info("Choose at least one candidate ε to compare.")
        return [], float(prior)
    note = negotiate.guarantee_note(sweep, config)
    if note:
        st.badge("NOT DP", color="red", icon=":material/gpp_bad:")
        st.error(note)
    try:
        cards = negotiate.compare(sweep, candidates, float(prior), metric, config)
    except ValueError as exc:
        st.error(str(exc))
        return list(candidates), float(prior)
    cards_row(cards, metric, drawn=note is None)
    return list(candidates), float(prior)


def cards_row(cards: list[negotiate.Candidate], metric: str, *, drawn: bool) -> None:
    """One card per candidate ε side by side, then (``drawn``: every line has a
    guarantee) the hypothesis-testing region of the candidates."""
    metric_name = ALL_METRIC_NAMES[metric]
    for col, card in zip(st.columns(len(cards), border=True), cards):
        with col:
            st.subheader(f"ε = {card.epsilon:g}")
            st.metric(
                f"{metric_name} (NOT private)",
                card.utility,
                delta=None if card.versus_reference == "—" else card.versus_reference,
                delta_color="red" if card.no_better_than_majority else "normal",
                help="Mean ± standard deviation over the held-out folds; the change is against "
                "the same forest without privacy.",
            )
            if card.majority:
                st.markdown(
                    f"Always the majority class: **{card.majority}** "
                    f"(this ε: {card.versus_majority})",
                    help="The trivial baseline: always answering the training folds' majority "
                    "class, scored on the same held-out folds. A model must beat it to have "
                    "learnt anything.",
                )
            if card.one_class:
                st.warning(card.one_class, icon=":material/warning:")
            if not card.private:
                st.markdown(":red-badge[NOT DP] no risk bound applies.")
                continue
            for key, label in negotiate.RISK_LABELS.items():
                # Number and formula on one line, the plain sentence under it.
                st.markdown(
                    f"{label}: **{card.numbers[key]}**",
                    help=negotiate.RISK_HELP[key],
                )
                st.caption(card.sentences[key])
    if drawn:
        st.plotly_chart(
            hypothesis_testing_figure([c.epsilon for c in cards]),
            key="negotiate.region",
            theme=None,
        )
        st.caption(
            "Hypothesis-testing region: an attacker guessing whether one person is in the data "
            "makes two kinds of error (false positive: says 'in' about someone who is not; "
            "false negative: says 'out' about someone who is). No attack, however clever, "
            "gets below its ε's line."
        )
