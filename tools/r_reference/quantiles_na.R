# R's quantile.survfit limits (median and quartiles with their confidence limits) on every bundled data set, and R's
# NA conventions on small synthetic cases: the reference values of tests/curves/r_reference/quantiles_na.json (read by
# tests/curves/test_r_quantiles_na.py; R is not needed to test).
#
# quantile.survfit reads the lower and upper limit curves with the same rule as the estimate (survival's findq): the
# curve's values are taken without duplicates, sorted, and the quantile is the first time whose 1 - S reaches p
# (within sqrt(.Machine$double.eps)), the midpoint where 1 - S equals p over an interval, and the midpoint with the
# curve's last time where it ends at p. Where a band is not monotone (log limits clipped at 1, plain limits clipped at
# 0) the sorted values decide, not the first crossing in time.
#
# Regenerate (R >= 4.2 with survival >= 3.5 and jsonlite), from the repository root:
#     Rscript tools/r_reference/quantiles_na.R
#
# Doubles are written as C99 hexadecimal floats (sprintf("%a")), so the test compares the very numbers R computed;
# NA is null.
suppressPackageStartupMessages({library(survival); library(jsonlite)})

hex <- function(x) lapply(unname(x), function(v) if (is.na(v)) NULL else sprintf("%a", v))
probs <- c(0.25, 0.5, 0.75)
conf_types <- c("log", "log-log", "plain")

source("tools/r_reference/bundled.R")  # bundled, datasets, read_bundled

quantiles_of <- function(fit) {
  # one entry per stratum: the three quantiles and their limits (NA: not reached)
  q <- quantile(fit, probs)
  as_rows <- function(m) if (is.null(dim(m))) matrix(m, nrow = 1) else m
  est <- as_rows(q$quantile); lo <- as_rows(q$lower); up <- as_rows(q$upper)
  strata <- if (is.null(fit$strata)) "all" else sub("^[^=]*=", "", names(fit$strata))
  lapply(seq_along(strata), function(i) list(group = strata[i], quantile = hex(est[i, ]), lower = hex(lo[i, ]),
                                              upper = hex(up[i, ])))
}

bundled_quantiles <- function() {
  out <- list()
  for (name in names(datasets)) {
    spec <- datasets[[name]]
    d <- read_bundled(name)
    for (g in c("", spec$groups)) {
      for (ct in conf_types) {
        if (g == "") {
          fit <- survfit(Surv(.time, .event) ~ 1, data = d, conf.type = ct)
        } else {
          dd <- d[!is.na(d[[g]]), ]
          dd$.group <- dd[[g]]
          fit <- survfit(Surv(.time, .event) ~ .group, data = dd, conf.type = ct)
        }
        out[[length(out) + 1]] <- list(data = name, group = if (g == "") NULL else g, conf_type = ct,
                                       strata = quantiles_of(fit))
      }
    }
  }
  out
}

# -- NA conventions on small synthetic data ---------------------------------------------------------------------------
two_groups <- data.frame(time = c(1, 2, 2, 4, 5, 6, 3, 5, 7, 8, 9, 10), status = c(1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0),
                         group = rep(c("A", "B"), each = 6))

before_first <- function() {
  # summary(fit, times = t) before a group's first time: S = 1 with limits [1, 1] for every conf.type
  cases <- lapply(c("plain", "log", "log-log", "logit", "arcsin"), function(ct) {
    fit <- survfit(Surv(time, status) ~ group, data = two_groups, conf.type = ct)
    s <- summary(fit, times = c(0.5, 2.5), extend = TRUE)
    list(conf_type = ct, strata = sub("^group=", "", as.character(s$strata)), time = hex(s$time), surv = hex(s$surv),
         lower = hex(s$lower), upper = hex(s$upper))
  })
  list(data = two_groups, cases = cases)
}

hazard_at_one <- function() {
  # H = 2/4 + 1/2 = 1 exactly at time 2, then above 1; R's cumulative-hazard limits (plot.survfit's
  # survfit_confint(cumhaz, std.chaz, logse = FALSE, ulimit = FALSE))
  d <- data.frame(time = c(1, 1, 2, 3), status = c(1, 1, 1, 0))
  fit <- survfit(Surv(time, status) ~ 1, data = d)
  lapply(c("plain", "log", "log-log", "logit", "arcsin"), function(ct) {
    ci <- survival:::survfit_confint(fit$cumhaz, fit$std.chaz, logse = FALSE, conf.type = ct, conf.int = 0.95,
                                     ulimit = FALSE)
    list(conf_type = ct, data = list(time = d$time, status = d$status), time = hex(fit$time),
         cumhaz = hex(fit$cumhaz), lower = hex(ci$lower), upper = hex(ci$upper))
  })
}

competing_at_zero <- function() {
  # every subject has an event of one type or the other by time 4: the event-free probability reaches 0
  d <- data.frame(time = c(1, 2, 2, 3, 4, 1.5, 2.5, 3.5), status = c(1, 2, 1, 0, 2, 1, 0, 1))
  d$type <- factor(d$status, 0:2, c("censored", "relapse", "death"))
  lapply(c("plain", "log", "log-log", "logit", "arcsin"), function(ct) {
    fit <- survfit(Surv(time, type) ~ 1, data = d, conf.type = ct)
    states <- fit$states
    lower <- matrix(fit$lower, nrow = length(fit$time))  # arcsin's limits come back without dimensions
    upper <- matrix(fit$upper, nrow = length(fit$time))
    list(conf_type = ct, data = list(time = d$time, status = d$status), time = hex(fit$time), states = states,
         pstate = lapply(seq_along(states), function(k) hex(fit$pstate[, k])),
         lower = lapply(seq_along(states), function(k) hex(lower[, k])),
         upper = lapply(seq_along(states), function(k) hex(upper[, k])))
  })
}

no_expected <- function() {
  # group C is censored before the first event: no expected events; survdiff of C against A
  d <- data.frame(time = c(2, 3, 5, 7, 4, 6, 8, 9, 0.5, 1), status = c(1, 1, 0, 1, 1, 1, 1, 0, 0, 0),
                  group = c(rep("A", 4), rep("B", 4), "C", "C"))
  pair <- function(a, b) {
    dd <- d[d$group %in% c(a, b), ]
    sd <- survdiff(Surv(time, status) ~ group, data = dd)
    df <- sum(diag(sd$var) > 0) - 1
    list(groups = c(a, b), chisq = hex(sd$chisq), df = max(df, 0),
         p = hex(pchisq(sd$chisq, max(df, 0), lower.tail = FALSE)), observed = sd$obs, expected = hex(sd$exp))
  }
  all <- survdiff(Surv(time, status) ~ group, data = d)
  list(data = d, pairs = list(pair("A", "C"), pair("B", "C"), pair("A", "B")),
       overall = list(chisq = hex(all$chisq), df = length(all$n) - 1 - sum(all$exp == 0),
                      p = hex(pchisq(all$chisq, length(all$n) - 1 - sum(all$exp == 0), lower.tail = FALSE))))
}

reference <- list(r_version = R.version.string, survival = as.character(packageVersion("survival")),
                  probabilities = probs, bundled = bundled_quantiles(), before_first = before_first(),
                  hazard_at_one = hazard_at_one(), competing_at_zero = competing_at_zero(),
                  no_expected = no_expected())
write_json(reference, "tests/curves/r_reference/quantiles_na.json", auto_unbox = TRUE, digits = NA, null = "null",
           na = "null", pretty = FALSE)
