# R's Kaplan-Meier curves (every event time: n.risk, n.event, survival and its 95% limits for each conf.type) and
# survdiff's log-rank tests (overall and every pair of groups) on every bundled data set, ungrouped and by each of its
# group columns: the reference values of tests/curves/r_reference/km_logrank.json (read by
# tests/curves/test_km_logrank_against_r.py; R is not needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5 and jsonlite), from the repository root:
#     Rscript tools/r_reference/km_logrank.R
#
# Doubles are written as C99 hexadecimal floats (sprintf("%a")), so the test compares the very numbers R computed;
# NA is null. R's defaults throughout, timefix included. flchain (7,874 subjects) keeps its file small: its curves by
# sex only and with conf.type log only (its tests by every group column).
suppressPackageStartupMessages({library(survival); library(jsonlite)})

hex <- function(x) lapply(unname(x), function(v) if (is.na(v)) NULL else sprintf("%a", v))
conf_types <- c("log", "log-log", "plain", "logit", "arcsin")

source("tools/r_reference/bundled.R")  # bundled, datasets, read_bundled
datasets$flchain$curve_groups <- "sex"  # flchain keeps the fixture small: curves by sex, conf.type log
datasets$flchain$conf_types <- "log"

strata_of <- function(fit) if (is.null(fit$strata)) "all" else sub("^[^=]*=", "", names(fit$strata))

curves <- function(formula, data, conf_types) {
  # one entry per stratum: its event times with R's numbers there, and the limits of every conf.type
  fits <- lapply(conf_types, function(ct) survfit(formula, data = data, conf.type = ct))
  s <- summary(fits[[1]], censored = FALSE)
  strata <- strata_of(fits[[1]])
  label <- if (is.null(s$strata)) rep("all", length(s$time)) else sub("^[^=]*=", "", as.character(s$strata))
  lapply(strata, function(g) {
    rows <- label == g
    limits <- lapply(seq_along(conf_types), function(i) {
      si <- summary(fits[[i]], censored = FALSE)
      list(conf_type = conf_types[i], lower = hex(si$lower[rows]), upper = hex(si$upper[rows]))
    })
    list(group = g, time = hex(s$time[rows]), n_risk = hex(s$n.risk[rows]), n_event = hex(s$n.event[rows]),
         survival = hex(s$surv[rows]), std_err = hex(s$std.err[rows]), limits = limits)
  })
}

test_of <- function(data) {
  sd <- survdiff(Surv(.time, .event) ~ .group, data = data)
  df <- sum(sd$exp > 0) - 1
  list(chisq = hex(sd$chisq), df = df, p = hex(if (df > 0) pchisq(sd$chisq, df, lower.tail = FALSE) else 1))
}

cases <- list()
for (name in names(datasets)) {
  spec <- datasets[[name]]
  d <- read_bundled(name)
  types <- if (is.null(spec$conf_types)) conf_types else spec$conf_types
  cases[[length(cases) + 1]] <- list(data = name, group = NULL, strata = curves(Surv(.time, .event) ~ 1, d, types))
  for (g in spec$groups) {
    dd <- d[!is.na(d[[g]]), ]
    dd$.group <- dd[[g]]
    levels <- sort(unique(dd$.group))
    pairs <- list()
    if (length(levels) > 1) {
      for (i in seq_len(length(levels) - 1)) for (j in (i + 1):length(levels)) {
        sub <- dd[dd$.group %in% c(levels[i], levels[j]), ]
        pairs[[length(pairs) + 1]] <- c(list(a = as.character(levels[i]), b = as.character(levels[j])), test_of(sub))
      }
    }
    drawn <- is.null(spec$curve_groups) || g %in% spec$curve_groups
    cases[[length(cases) + 1]] <- list(data = name, group = g,
                                       strata = if (drawn) curves(Surv(.time, .event) ~ .group, dd, types) else list(),
                                       overall = test_of(dd), pairs = pairs)
  }
}

out <- list(r_version = R.version.string, survival = as.character(packageVersion("survival")), conf_types = conf_types,
            cases = cases)
writeLines(toJSON(out, auto_unbox = TRUE, null = "null", digits = NA), "tests/curves/r_reference/km_logrank.json")
