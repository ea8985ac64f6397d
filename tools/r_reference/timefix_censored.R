# R's survfit and survdiff on near-tied times (timefix), on all-censored data, and R's Aalen-Johansen cumulative
# incidence of a file whose event column holds the event types (a factor status): the reference values of
# tests/curves/r_reference/timefix_censored.json (read by tests/curves/test_timefix_censored_against_r.py; R is not
# needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5 and jsonlite; apt-get install r-base-core r-cran-survival
# r-cran-jsonlite), from the repository root:
#     Rscript tools/r_reference/timefix_censored.R
#
# Times are written as C99 hexadecimal floats (sprintf("%a")), so the test reads the very doubles R counted: near-tied
# times such as 0.1 + 0.2 and 0.3 differ in their last bits only, which a decimal print would round away.
suppressPackageStartupMessages({library(survival); library(jsonlite)})

hex <- function(x) sprintf("%a", x)

near_ties <- function() {
  # 0.1 + 0.2 against 0.3, and times built by arithmetic that lands a few ulps off their decimal twins
  set.seed(38)
  base <- round(rexp(80, 0.1), 1) + 0.1
  t <- base
  i <- seq(2, 80, by = 3)
  t[i] <- (base[i] * 10 - 1) / 10 + 0.1   # same decimal value, possibly different last bits
  j <- seq(3, 80, by = 5)
  t[j] <- base[j] * (1 + 1e-12)           # a relative difference far below sqrt(.Machine$double.eps)
  k <- seq(4, 80, by = 7)
  t[k] <- base[k] + 1e-9                  # an absolute difference below it
  t <- c(0.1 + 0.2, 0.3, 0.3, 0.1 + 0.2, 0.7, 0.6 + 0.1, t)
  status <- c(1, 1, 0, 1, 1, 1, rbinom(80, 1, 0.7))
  group <- rep(c("A", "B"), length.out = length(t))
  data.frame(time = t, status = status, group = group)
}

all_censored <- function() {
  set.seed(5)
  t <- round(rexp(40, 0.05), 1) + 0.5
  data.frame(time = t, status = 0, group = rep(c("A", "B"), 20))
}

curve <- function(fit) {
  s <- summary(fit, censored = TRUE)
  strata <- if (is.null(s$strata)) rep("all", length(s$time)) else sub("^group=", "", as.character(s$strata))
  tab <- summary(fit)$table
  if (is.null(dim(tab))) tab <- matrix(tab, nrow = 1, dimnames = list("all", names(tab)))
  rownames(tab) <- sub("^group=", "", rownames(tab))
  list(strata = strata, time = hex(s$time), n_risk = s$n.risk, n_event = s$n.event, surv = s$surv,
       std_err = s$std.err, lower = s$lower, upper = s$upper,
       median = as.list(setNames(tab[, "median"], rownames(tab))))
}

test <- function(d) {
  # survdiff's default, timefix = TRUE (survival 3.5-3 cannot be given timefix = FALSE: it passes the argument on to
  # model.frame, which refuses it, so the fixture has the log-rank test with timefix only)
  sd <- survdiff(Surv(time, status) ~ group, data = d)
  df <- sum(sd$exp > 0) - 1
  list(chisq = sd$chisq, df = df, p = if (df > 0) pchisq(sd$chisq, df, lower.tail = FALSE) else NA,
       observed = as.numeric(sd$obs), expected = as.numeric(sd$exp))
}

case <- function(d) {
  list(data = list(time = hex(d$time), status = d$status, group = d$group),
       distinct_times = length(unique(d$time)),
       timefix = list(pooled = curve(survfit(Surv(time, status) ~ 1, data = d)),
                      grouped = curve(survfit(Surv(time, status) ~ group, data = d)),
                      logrank = test(d)),
       exact = list(pooled = curve(survfit(Surv(time, status) ~ 1, data = d, timefix = FALSE)),
                    grouped = curve(survfit(Surv(time, status) ~ group, data = d, timefix = FALSE))))
}

competing <- function() {
  # one column holds every outcome: 'censored' or the event type; survfit's factor status, censoring its first level
  set.seed(61)
  n <- 120
  cause <- sample(c("censored", "relapse", "death"), n, replace = TRUE, prob = c(0.3, 0.4, 0.3))
  d <- data.frame(time = round(rexp(n, 1 / 300)) + 1, cause = cause)
  fit <- survfit(Surv(time, factor(cause, levels = c("censored", "relapse", "death"))) ~ 1, data = d)
  list(data = list(time = hex(d$time), cause = d$cause), time = hex(fit$time),
       relapse = fit$pstate[, 2], death = fit$pstate[, 3],
       relapse_lower = fit$lower[, 2], relapse_upper = fit$upper[, 2],
       death_lower = fit$lower[, 3], death_upper = fit$upper[, 3])
}

out <- list(r_version = R.version.string, survival_version = as.character(packageVersion("survival")),
            near_ties = case(near_ties()), all_censored = case(all_censored()),
            competing = competing())
dir.create("tests/curves/r_reference", showWarnings = FALSE, recursive = TRUE)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, na = "null", null = "null", pretty = FALSE),
           "tests/curves/r_reference/timefix_censored.json")
